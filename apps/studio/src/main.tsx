import { TransportProvider } from '@connectrpc/connect-query';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App.js';
import { LanguageProvider } from './lib/i18n.js';
import { studioTransport } from './lib/transport.js';
import './styles.css';

const queryClient = new QueryClient({
  // A failed call is shown with its reason at once; retrying hides what the server said.
  defaultOptions: { queries: { retry: false, refetchOnWindowFocus: false, staleTime: 5_000 } },
});

const root = document.getElementById('root');
if (root === null) throw new Error('#root is missing from index.html');
createRoot(root).render(
  <StrictMode>
    <LanguageProvider>
      <TransportProvider transport={studioTransport()}>
        <QueryClientProvider client={queryClient}>
          <App />
        </QueryClientProvider>
      </TransportProvider>
    </LanguageProvider>
  </StrictMode>,
);
