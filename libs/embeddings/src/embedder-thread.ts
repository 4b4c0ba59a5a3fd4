/**
 * The worker thread of {@link ThreadedEmbedder}: builds the embedder of its recipe and answers
 * `embed` requests one after the other until it is asked to close.
 */
import { parentPort, workerData } from 'node:worker_threads';
import {
  localEmbedder,
  toThreadError,
  type LocalEmbedderRecipe,
  type ThreadReply,
  type ThreadRequest,
} from './threaded-embedder.js';

const port = parentPort;
if (port === null) throw new Error('embedder-thread.ts runs as a worker thread only');
const embedder = localEmbedder(workerData as LocalEmbedderRecipe);

port.on('message', (request: ThreadRequest) => {
  if (request.type === 'close') {
    void embedder.close().finally(() => {
      port.close();
    });
    return;
  }
  embedder.embed(request.texts, request.kind).then(
    (result) => {
      const reply: ThreadReply = { id: request.id, vectors: result.vectors, truncated: result.truncated };
      port.postMessage(reply);
    },
    (error: unknown) => {
      const reply: ThreadReply = { id: request.id, error: toThreadError(error) };
      port.postMessage(reply);
    },
  );
});
