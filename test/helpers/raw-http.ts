// Raw HTTP/1.1 over a socket, for what inject cannot send: a request without Host, oversized
// headers, an Expect the server must refuse before any route runs.
import { connect } from 'node:net'

/** Sends raw bytes and collects everything until the server closes the connection. */
export function rawExchange (port: number, data: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(data))
    let received = ''
    socket.on('data', chunk => { received += String(chunk) })
    socket.on('error', reject)
    socket.on('close', () => resolve(received))
  })
}
