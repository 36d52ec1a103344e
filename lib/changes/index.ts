// The change feed as the plugin wires it (docs/changes.md): the store wrapped so that writes record
// their changes, the wake-ups of waiting readers, the route's spec, the purge past retention, and
// the followers of the log when configured: the publisher to NATS JetStream, the onChange hook.
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify'
import { OptionsInvalidError } from '../errors.js'
import type { OperationContext } from '../operations/context.js'
import type { StoreOf } from '../operations/stores.js'
import type { ResourceModel } from '../registry/model.js'
import { apiRoute } from '../route-spec.js'
import type { RouteSpec } from '../route-spec.js'
import type { Store } from '../stores/store.js'
import { changeFeed } from './feed.js'
import { natsPublisher } from './nats.js'
import { changeConsumer } from './consumer.js'
import { changePresenter, unrestricted } from './present.js'
import { purgeNowAndThen } from './purge.js'
import type { ResolvedChanges } from './options.js'
import { recordingStore } from './recording.js'
import { createWakeups } from './wakeups.js'
import { createWebhooks, WEBHOOKS, webhookModels } from './webhooks.js'
import { changesRouteSchema } from './schema.js'
import { schemaOptionsFor } from '../routes/route-schema.js'
import type { SchemaOptions } from '../routes/route-schema.js'

export interface Changes {
  /** The stores the routes use: the resources' store, recording. */
  readonly storeOf: StoreOf
  /** The route, once the operation context exists. */
  readonly spec: (context: OperationContext, schemaOptions: SchemaOptions, app: FastifyInstance) => RouteSpec
  /** With `nats` and `onChange`: the publisher and the hook's consumer, started when the app is ready and stopped as it closes. */
  readonly publish: (context: OperationContext, app: FastifyInstance) => Promise<void>
  /** With `webhooks`: the routes of deliveries, and the fan-out and sender, started when the app is ready and stopped as it closes. */
  readonly webhooks: (context: OperationContext, app: FastifyInstance) => RouteSpec[]
  /** The models the store keeps for the feed's own use (webhook deliveries), prepared with the resources'. */
  readonly ownModels: readonly ResourceModel[]
}

/**
 * The feed of `models`, which must share one store with a change log (a feed reads one log).
 * `keepsPrevious` is read when a write is made (the rules are compiled after this); `logger` is
 * told when purging the expired changes fails.
 */
export function setUpChanges (settings: ResolvedChanges, models: readonly ResourceModel[], assigned: StoreOf, keepsPrevious: (model: ResourceModel) => boolean, logger: FastifyBaseLogger): Changes {
  const store = assigned(models[0])
  if (models.some(model => assigned(model) !== store)) throw new OptionsInvalidError('changes needs every resource kept in one store: the feed reads one change log')
  const appends = store.writesChanges === true || typeof store.appendChanges === 'function'
  if (!appends || typeof store.readChanges !== 'function' || typeof store.purgeChanges !== 'function') {
    throw new OptionsInvalidError('changes needs a store with a change log (appendChanges or writesChanges, readChanges, purgeChanges): the memory, PGlite and PostgreSQL stores have one')
  }
  const log = store as Required<Pick<Store, 'readChanges' | 'purgeChanges'>>
  const purge = purgeNowAndThen(async () => await log.purgeChanges(new Date(Date.now() - settings.retention)), logger, 'api-conventions: purging expired changes failed')
  const wakeups = createWakeups(async () => (await log.readChanges({ after: null, limit: 0, resources: null })).head, settings.pollInterval)
  const recording = recordingStore(store, {
    keepsPrevious,
    // Subscriptions are no one's news, and the log (published whole to NATS) must not hold their secrets.
    records: settings.webhooks === null ? undefined : model => model.name !== WEBHOOKS,
    committed () {
      wakeups.committed()
      purge.nowAndThen()
    }
  })
  return {
    storeOf: () => recording,
    async publish (context, app) {
      const present = changePresenter(context.models, unrestricted)
      if (settings.onChange !== null) {
        const consumer = changeConsumer(settings.onChange, log, wakeups, change => present(null, change), app.log)
        app.addHook('onReady', async function startChangeConsumer () { consumer.start() })
        app.addHook('preClose', async function stopChangeConsumer () { await consumer.stop() })
      }
      if (settings.nats === null) return
      const publisher = await natsPublisher(settings.nats, log, wakeups, change => present(null, change), app.log)
      app.addHook('onReady', async function startPublishingChanges () { publisher.start() })
      app.addHook('onClose', async function stopPublishingChanges () { await publisher.stop() })
    },
    ownModels: settings.webhooks === null ? [] : webhookModels,
    webhooks (context, app) {
      if (settings.webhooks === null) return []
      const webhooksModel = models.find(model => model.name === WEBHOOKS) as ResourceModel
      const hooks = createWebhooks(settings.webhooks, settings.retention, store, wakeups, changePresenter(context.models, context.views), app.log, webhooksModel)
      app.addHook('onReady', async function startWebhooks () { hooks.start() })
      // Before the store closes (onClose), so that an attempt cut short is handed back at once.
      app.addHook('preClose', async function stopWebhooks () { await hooks.stop() })
      return hooks.specs(context, schemaOptionsFor(context))
    },
    spec (context, schemaOptions, app) {
      const feed = changeFeed(context, log, settings, wakeups)
      // Open event streams end as the server closes, or it would wait for them.
      app.addHook('preClose', function endChangeStreams (done) {
        feed.close()
        done()
      })
      const json = ['application/json']
      return apiRoute({
        method: 'GET',
        path: '/changes',
        allow: ['GET', 'HEAD'],
        operation: 'changes',
        responseTypes: [...json, 'text/event-stream'],
        schema: changesRouteSchema(context, schemaOptions),
        handler: async function readChanges (request: FastifyRequest, reply) {
          purge.nowAndThen()
          return await feed.handler.call(this, request, reply)
        }
      })
    }
  }
}
