// Server-Sent Events read from a fetch Response (the change feed's stream): blocks as they arrive.
export interface ServerEvent { readonly id?: string, readonly event?: string, readonly data?: string, readonly comment?: string }

/** The blocks of an event stream as they come, each parsed into its fields. */
export function eventReader (body: ReadableStream<Uint8Array>) {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let text = ''
  const parse = (block: string): ServerEvent => {
    const fields: Record<string, string> = {}
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) fields.comment = line.slice(1).trim()
      else fields[line.slice(0, line.indexOf(':'))] = line.slice(line.indexOf(':') + 2)
    }
    return fields
  }
  return {
    /** The next block, or null when the stream ends. */
    async next (): Promise<ServerEvent | null> {
      while (!text.includes('\n\n')) {
        const { value, done } = await reader.read()
        if (done) return null
        text += decoder.decode(value, { stream: true })
      }
      const end = text.indexOf('\n\n')
      const block = text.slice(0, end)
      text = text.slice(end + 2)
      return parse(block)
    },
    cancel: async () => { await reader.cancel().catch(() => {}) }
  }
}
