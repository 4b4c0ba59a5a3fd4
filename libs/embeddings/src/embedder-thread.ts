/**
 * The worker thread of {@link ThreadedEmbedder}: builds the embedder of its recipe and answers
 * `embed` requests one after the other until it is asked to close.
 */
import { setPriority } from 'node:os';
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
const recipe = workerData as LocalEmbedderRecipe;
// Linux keeps a nice value per thread, and `setpriority(PRIO_PROCESS, 0)` (what os.setPriority
// calls) sets the calling thread's; threads started later (ONNX Runtime's) inherit it. Elsewhere
// the same call would reprioritize the whole process, so it is not made.
if (recipe.nice !== undefined && recipe.nice > 0 && process.platform === 'linux') setPriority(0, recipe.nice);
const embedder = localEmbedder(recipe);

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
