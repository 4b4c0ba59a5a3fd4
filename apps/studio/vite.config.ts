import react from '@vitejs/plugin-react';
import { defaultClientConditions, defineConfig } from 'vite';

// Built into dist/ and served by the all-in-one at /studio (libs/gateway/src/studio). The
// workspace packages resolve to their TypeScript sources, as everywhere else in the repository.
export default defineConfig({
  base: '/studio/',
  plugins: [react()],
  resolve: { conditions: ['@engram/source', ...defaultClientConditions] },
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: true, chunkSizeWarningLimit: 1024 },
  // `npm run dev -w apps/studio`: the UI from Vite, the RPCs from an all-in-one on 50051.
  server: {
    proxy: {
      '^/(engram|grpc)\\.': 'http://127.0.0.1:50051',
      '/studio/local': 'http://127.0.0.1:50051',
    },
  },
});
