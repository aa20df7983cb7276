/** An HTTP/1.1 answer read off a bare socket's bytes: null until its head and Content-Length bytes of body have arrived. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export function parseRawAnswer(received: Buffer): RawAnswer | null {
  const end = received.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = received.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const i = line.indexOf(':');
    headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const length = Number(headers['content-length'] ?? NaN);
  const body = received.subarray(end + 4);
  if (!(body.length >= length)) return null;
  return { status: Number(lines[0]!.split(' ')[1]), headers, body: body.subarray(0, length).toString('utf8') };
}
