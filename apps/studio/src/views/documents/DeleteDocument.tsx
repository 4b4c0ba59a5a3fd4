import { useMutation } from '@connectrpc/connect-query';
import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { IngestionService, type Document } from '@engram/contracts/ingestion';
import { ErrorNotice } from '../../components/ui.js';
import { shortName } from '../../lib/format.js';
import { defineMessages, useMessages } from '../../lib/i18n.js';
import { navigate, routeHash } from '../../lib/route.js';

const text = defineMessages({
  en: {
    delete: 'Delete…',
    confirm: (chunks: number) =>
      `Delete this document and its ${String(chunks)} chunks for good? Retrieval stops returning them at once. This cannot be undone.`,
    yes: 'Delete for good',
    cancel: 'Cancel',
  },
  zh: {
    delete: '删除…',
    confirm: (chunks: number) =>
      `永久删除此文档及其 ${String(chunks)} 个分块？检索将立即不再返回它们。此操作无法撤销。`,
    yes: '永久删除',
    cancel: '取消',
  },
});

/** Delete with an inline confirmation; on success back to the list, which says what was deleted. */
export function DeleteDocument({ document }: { readonly document: Document }) {
  const t = useMessages(text);
  const queryClient = useQueryClient();
  const [asking, setAsking] = useState(false);
  const remove = useMutation(IngestionService.method.deleteDocument, {
    onSuccess: async (deleted) => {
      // Stale, not refetched: this page's GetDocument would only answer NOT_FOUND now.
      await queryClient.invalidateQueries({ refetchType: 'none' });
      navigate(
        routeHash('documents', [], {
          deleted: document.displayName !== '' ? document.displayName : shortName(document.name),
          chunks: String(deleted.chunksDeleted),
        }),
      );
    },
  });
  if (!asking)
    return (
      <button type="button" className="danger" onClick={() => setAsking(true)}>
        {t.delete}
      </button>
    );
  return (
    <div className="confirm" role="group" aria-label={t.yes}>
      <p>{t.confirm(document.chunkCount)}</p>
      <div className="row">
        <button
          type="button"
          className="danger"
          autoFocus
          disabled={remove.isPending}
          onClick={() => remove.mutate({ name: document.name })}
        >
          {t.yes}
        </button>
        <button type="button" onClick={() => setAsking(false)} disabled={remove.isPending}>
          {t.cancel}
        </button>
      </div>
      <ErrorNotice error={remove.error} />
    </div>
  );
}
