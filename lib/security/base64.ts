// Strict base64 (RFC 4648 §4, padded, no line breaks or whitespace) to UTF-8 text, for Basic
// credentials (RFC 7617) and the audit headers (spec "Limits": base64-encoded).

const base64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
const utf8 = new TextDecoder('utf-8', { fatal: true })

/** The decoded text, or null when the value is not canonical padded base64 of UTF-8 text. */
export function decodeBase64 (text: string): string | null {
  if (text === '' || !base64.test(text)) return null
  const bytes = Buffer.from(text, 'base64')
  // Non-zero unused bits in the last character decode like zero ones: only the canonical form is accepted.
  if (bytes.toString('base64') !== text) return null
  try {
    return utf8.decode(bytes)
  } catch {
    return null
  }
}
