// The chart of benchmarks/README.md: the ratios of one run as an SVG bar chart,
// rendered from the results JSON with vega-lite and vega's server-side SVG renderer. run.ts calls
// it after each full run; `node dist/benchmarks/chart.js` redraws it from results/latest.json.
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { View, parse } from 'vega'
import { compile } from 'vega-lite'
import type { TopLevelSpec } from 'vega-lite'

/** The parts of results/latest.json the chart reads. */
export interface ChartInput {
  readonly date: string
  readonly node: string
  readonly cases: ReadonlyArray<{ readonly store: string, readonly name: string, readonly ratio: number, readonly target: number | null, readonly headersCeiling?: number }>
  readonly micro: null | {
    readonly serialize: { readonly ratios: ReadonlyArray<{ readonly items: number, readonly vsHandWritten: number, readonly vsJsonStringify: number }> }
  }
}

interface Bar { label: string, ratio: number, target: number | null, ceiling?: number, verdict: string }

function bars (input: ChartInput): Bar[] {
  const verdict = (ratio: number, target: number | null) => target === null ? 'no target' : ratio >= target ? 'meets target' : 'below target'
  const list: Array<Omit<Bar, 'verdict'>> = input.cases.map(c => ({ label: `${c.store} ${c.name}`, ratio: c.ratio, target: c.target, ceiling: c.headersCeiling }))
  for (const r of input.micro?.serialize.ratios ?? []) {
    list.push({ label: `serializer, ${r.items} items ÷ hand-written schema`, ratio: r.vsHandWritten, target: 0.95 })
    list.push({ label: `serializer, ${r.items} items ÷ JSON.stringify`, ratio: r.vsJsonStringify, target: 1 })
  }
  return list.map(bar => ({ ...bar, ratio: Math.round(bar.ratio * 100) / 100, verdict: verdict(bar.ratio, bar.target) }))
}

export async function renderChart (input: ChartInput): Promise<string> {
  const data = bars(input)
  const y = { field: 'label', type: 'nominal', sort: null, title: null, axis: { labelLimit: 400 } } as const
  const spec: TopLevelSpec = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: 'Plugin ÷ baseline (median ratio within one run; black tick = target)',
      subtitle: `${input.date.slice(0, 10)}, Node ${input.node}; blue tick = the baseline sending the plugin's response headers too`
    },
    width: 420,
    data: { values: data },
    layer: [
      {
        mark: 'bar',
        encoding: {
          y,
          x: { field: 'ratio', type: 'quantitative', title: 'ratio', scale: { domainMin: 0 } },
          color: {
            field: 'verdict',
            type: 'nominal',
            title: null,
            scale: { domain: ['meets target', 'below target', 'no target'], range: ['#3a7d44', '#c0392b', '#8a8f98'] }
          }
        }
      },
      {
        transform: [{ filter: 'datum.target != null' }],
        mark: { type: 'tick', color: 'black', thickness: 2 },
        encoding: { y, x: { field: 'target', type: 'quantitative' } }
      },
      {
        transform: [{ filter: 'datum.ceiling != null' }],
        mark: { type: 'tick', color: '#2c6fbb', thickness: 2 },
        encoding: { y, x: { field: 'ceiling', type: 'quantitative' } }
      },
      {
        mark: { type: 'text', align: 'left', dx: 4 },
        encoding: { y, x: { field: 'ratio', type: 'quantitative' }, text: { field: 'ratio', type: 'quantitative', format: '.2f' } }
      }
    ]
  }
  const view = new View(parse(compile(spec).spec), { renderer: 'none' })
  return await view.toSVG()
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const results = fileURLToPath(new URL('../../benchmarks/results/', import.meta.url))
  const input = JSON.parse(readFileSync(`${results}latest.json`, 'utf8')) as ChartInput
  writeFileSync(`${results}ratios.svg`, await renderChart(input))
}
