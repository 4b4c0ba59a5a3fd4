import type { MessageInitShape } from '@bufbuild/protobuf';
import { createClient, type Transport } from '@connectrpc/connect';
import { createConnectQueryKey, skipToken, useQuery, useTransport } from '@connectrpc/connect-query';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ContextService, type BuildContextRequestSchema } from '@engram/contracts/context';
import { IngestionService } from '@engram/contracts/ingestion';
import { Empty, ErrorNotice, Loading } from '../components/ui.js';
import { useMessages } from '../lib/i18n.js';
import type { ViewProps } from '../lib/route.js';
import { ContextFormPanel } from './context/ContextFormPanel.js';
import { ContextResult } from './context/ContextResult.js';
import { contextText } from './context/messages.js';
import {
  buildContextRequest,
  EMPTY_CONTEXT_FORM,
  PREVIEW_SESSION_EXTERNAL_ID,
  type ContextForm,
} from './context/model.js';
import './context.css';

type Request = MessageInitShape<typeof BuildContextRequestSchema>;

/**
 * The caller's empty preview session (found by its external id, else created): BuildContext
 * needs a session, and "none" means one without history.
 */
async function previewSession(transport: Transport): Promise<string> {
  const ingestion = createClient(IngestionService, transport);
  const found = await ingestion.listSessions({ externalId: PREVIEW_SESSION_EXTERNAL_ID, pageSize: 1 });
  const existing = found.sessions[0];
  if (existing !== undefined) return existing.name;
  const created = await ingestion.createSession({
    session: { externalId: PREVIEW_SESSION_EXTERNAL_ID, displayName: 'Studio context preview' },
  });
  return created.session?.name ?? '';
}

/** `?session=` of a deep link: `sessions/ID` or just `ID`. */
function sessionFromRoute(value: string | null): string {
  if (value === null || value === '') return '';
  return value.startsWith('sessions/') ? value : `sessions/${value}`;
}

/**
 * The Context builder (`#/context`, optionally `?session=…`): ContextService.BuildContext for a
 * user message under a budget, showing the messages the model would get, the tokens per layer
 * and the trace of every included and dropped candidate.
 */
export function ContextView({ route }: ViewProps) {
  const t = useMessages(contextText);
  const transport = useTransport();
  const queryClient = useQueryClient();
  const [request, setRequest] = useState<Request | undefined>(undefined);
  const prepare = useMutation({
    mutationFn: async (form: ContextForm): Promise<Request> => {
      const session = form.session !== '' ? form.session : await previewSession(transport);
      return buildContextRequest(form, session).request;
    },
    onSuccess: (next, form) => {
      if (request !== undefined && JSON.stringify(next) === JSON.stringify(request)) void built.refetch();
      else setRequest(next);
      // The preview session may be new: the session list shows it from now on.
      if (form.session === '') {
        void queryClient.invalidateQueries({
          queryKey: createConnectQueryKey({
            schema: IngestionService.method.listSessions,
            cardinality: undefined,
          }),
        });
      }
    },
  });
  const built = useQuery(ContextService.method.buildContext, request ?? skipToken);
  const initial: ContextForm = {
    ...EMPTY_CONTEXT_FORM,
    session: sessionFromRoute(route.query.get('session')),
  };
  return (
    <div className="ctx-view">
      <h1>{t.title}</h1>
      <p className="muted">{t.intro}</p>
      <ContextFormPanel
        initial={initial}
        busy={prepare.isPending || built.isFetching}
        onBuild={(f) => prepare.mutate(f)}
      />
      {prepare.isError ? (
        <ErrorNotice error={prepare.error} />
      ) : request === undefined ? (
        <Empty>{t.start}</Empty>
      ) : built.isPending || (built.isFetching && built.isError) ? (
        <Loading />
      ) : built.isError ? (
        <ErrorNotice error={built.error} />
      ) : (
        <ContextResult response={built.data} />
      )}
    </div>
  );
}
