import type { IncomingMessage } from 'node:http';

/**
 * The request body, up to `maxBytes`: `'too-large'` as soon as it grows past them (the rest is
 * left unread), `'gone'` when the client goes away first.
 */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | 'too-large' | 'gone'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const stop = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > maxBytes) {
        stop();
        req.pause();
        resolve('too-large');
      } else {
        chunks.push(chunk);
      }
    };
    const onEnd = () => {
      stop();
      resolve(Buffer.concat(chunks, bytes));
    };
    const onError = (error: Error) => {
      stop();
      if ((error as NodeJS.ErrnoException).code === 'ECONNRESET') resolve('gone');
      else reject(error);
    };
    const onClose = () => {
      stop();
      resolve('gone');
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}
