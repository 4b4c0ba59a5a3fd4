import { useMutation } from '@connectrpc/connect-query';
import { useQueryClient } from '@tanstack/react-query';
import { useState, type SyntheticEvent } from 'react';
import { GovernanceService, type Decision, type Memory } from '@engram/contracts/governance';
import { Section } from '../../components/ui.js';
import { useMessages } from '../../lib/i18n.js';
import { currentToken, decodeClaims } from '../../lib/session.js';
import { allowedActions, updateRequest } from './model.js';
import { DecisionBox, RefusalNotice } from './parts.js';
import { memoriesText } from './text.js';

type Done = {
  readonly note: 'updatedNote' | 'deletedNote' | 'restoredNote' | 'noChange';
  readonly decision?: Decision;
};

/** Edit text, pin evergreen, delete and restore (the owner's actions), then the server's answer. */
export function MemoryActions({ memory }: { readonly memory: Memory }) {
  const t = useMessages(memoriesText);
  const queryClient = useQueryClient();
  const [text, setText] = useState(memory.text);
  const [reason, setReason] = useState('');
  const [done, setDone] = useState<Done | undefined>();
  const refresh = () => queryClient.invalidateQueries();
  const update = useMutation(GovernanceService.method.updateMemory, {
    onSuccess: async (r) => {
      setDone({ note: 'updatedNote', ...(r.decision !== undefined ? { decision: r.decision } : {}) });
      await refresh();
    },
  });
  const remove = useMutation(GovernanceService.method.deleteMemory, {
    onSuccess: async () => {
      setDone({ note: 'deletedNote' });
      await refresh();
    },
  });
  const restore = useMutation(GovernanceService.method.restoreMemory, {
    onSuccess: async (r) => {
      setDone({ note: 'restoredNote', ...(r.decision !== undefined ? { decision: r.decision } : {}) });
      await refresh();
    },
  });
  const busy = update.isPending || remove.isPending || restore.isPending;
  const allowed = allowedActions(memory);
  const subject = decodeClaims(currentToken() ?? '')?.subject;
  const owner = subject === undefined || subject === memory.owner;
  const start = () => {
    setDone(undefined);
    update.reset();
    remove.reset();
    restore.reset();
  };
  const edit = (change: { text?: string; evergreen?: boolean }) => {
    start();
    const request = updateRequest(memory, change);
    if (request === undefined) setDone({ note: 'noChange' });
    else update.mutate(request);
  };
  const onSave = (e: SyntheticEvent) => {
    e.preventDefault();
    edit({ text });
  };
  return (
    <Section title={t.actions} id="actions-title">
      {!owner ? <p className="muted">{t.notOwner}</p> : null}
      {allowed.edit ? (
        <form onSubmit={onSave} className="edit-form" aria-label={t.save}>
          <label className="block">
            {t.editText}
            <textarea name="text" rows={3} value={text} onChange={(e) => setText(e.target.value)} />
          </label>
          <button type="submit" className="primary" disabled={busy}>
            {t.save}
          </button>
        </form>
      ) : null}
      <div className="row">
        {allowed.pin ? (
          <button type="button" disabled={busy} onClick={() => edit({ evergreen: !memory.evergreen })}>
            {memory.evergreen ? t.unpin : t.pin}
          </button>
        ) : null}
        {allowed.remove ? (
          <>
            <label>
              {t.deleteReason}{' '}
              <input name="deleteReason" value={reason} onChange={(e) => setReason(e.target.value)} />
            </label>
            <button
              type="button"
              className="danger"
              disabled={busy}
              onClick={() => {
                start();
                remove.mutate({ name: memory.name, etag: memory.etag, reason: reason.trim() });
              }}
            >
              {t.remove}
            </button>
          </>
        ) : null}
        {allowed.restore ? (
          <button
            type="button"
            disabled={busy}
            onClick={() => {
              start();
              restore.mutate({ name: memory.name, etag: memory.etag });
            }}
          >
            {t.restore}
          </button>
        ) : null}
        {busy ? <span className="muted">{t.working}</span> : null}
      </div>
      {done !== undefined ? (
        <div className="action-result" role="status" data-testid="action-result">
          <p>{t[done.note]}</p>
          {done.decision !== undefined ? <DecisionBox decision={done.decision} /> : null}
        </div>
      ) : null}
      <RefusalNotice error={update.error ?? remove.error ?? restore.error} />
    </Section>
  );
}
