import { useMutation } from '@connectrpc/connect-query';
import { useQueryClient } from '@tanstack/react-query';
import { useState, type SyntheticEvent } from 'react';
import { GovernanceService, MemoryType, type CreateMemoryResponse } from '@engram/contracts/governance';
import { Section } from '../../components/ui.js';
import { enumName } from '../../lib/format.js';
import { useMessages } from '../../lib/i18n.js';
import {
  createRequest,
  EMPTY_FORM,
  MEMORY_TYPES,
  newRequestId,
  type FormProblem,
  type RememberForm,
} from './model.js';
import { DecisionBox, MemoryLink, RefusalNotice } from './parts.js';
import { memoriesText } from './text.js';

/** The Remember form: CreateMemory, then the decision (or the refusal with its rule). */
export function RememberPanel() {
  const t = useMessages(memoriesText);
  const queryClient = useQueryClient();
  const [form, setForm] = useState<RememberForm>(EMPTY_FORM);
  const [problem, setProblem] = useState<FormProblem | undefined>();
  const [result, setResult] = useState<
    { response: CreateMemoryResponse; validateOnly: boolean } | undefined
  >();
  const create = useMutation(GovernanceService.method.createMemory, {
    onSuccess: async (response, request) => {
      setResult({ response, validateOnly: request.validateOnly === true });
      await queryClient.invalidateQueries();
    },
  });
  const set = (patch: Partial<RememberForm>) => setForm((f) => ({ ...f, ...patch }));
  const fact = form.type === MemoryType.FACT;
  const onSubmit = (e: SyntheticEvent) => {
    e.preventDefault();
    setResult(undefined);
    create.reset();
    const built = createRequest(form, newRequestId());
    if (!built.ok) {
      setProblem(built.problem);
      return;
    }
    setProblem(undefined);
    create.mutate(built.request);
  };
  return (
    <Section title={t.remember} id="remember-title">
      <p className="muted">{t.rememberHint}</p>
      <form className="remember-form" onSubmit={onSubmit} aria-labelledby="remember-title">
        <div className="row">
          <label>
            {t.type}{' '}
            <select
              name="type"
              value={form.type}
              onChange={(e) =>
                set({ type: MEMORY_TYPES.find((ty) => String(ty) === e.target.value) ?? MemoryType.FACT })
              }
            >
              {MEMORY_TYPES.filter((ty) => ty !== MemoryType.FORESIGHT).map((ty) => (
                <option key={ty} value={ty}>
                  {enumName(MemoryType, ty)}
                </option>
              ))}
            </select>
          </label>
          {fact ? (
            <>
              <label>
                {t.namespace}{' '}
                <input
                  name="namespace"
                  value={form.namespace}
                  onChange={(e) => set({ namespace: e.target.value })}
                />
              </label>
              <label>
                {t.key} <input name="key" value={form.key} onChange={(e) => set({ key: e.target.value })} />
              </label>
            </>
          ) : null}
          <label>
            {t.confidenceHint}{' '}
            <input
              name="confidence"
              inputMode="decimal"
              size={6}
              value={form.confidence}
              onChange={(e) => set({ confidence: e.target.value })}
            />
          </label>
        </div>
        <label className="block">
          {t.statement}
          <textarea
            name="statement"
            rows={2}
            value={form.text}
            onChange={(e) => set({ text: e.target.value })}
          />
        </label>
        {fact ? (
          <label className="block">
            {t.valueJson}
            <textarea
              name="value"
              rows={2}
              value={form.value}
              onChange={(e) => set({ value: e.target.value })}
            />
          </label>
        ) : null}
        <div className="row">
          {fact ? (
            <label>
              <input
                type="checkbox"
                name="evergreen"
                checked={form.evergreen}
                onChange={(e) => set({ evergreen: e.target.checked })}
              />{' '}
              {t.evergreen}
            </label>
          ) : null}
          <label>
            <input
              type="checkbox"
              name="validateOnly"
              checked={form.validateOnly}
              onChange={(e) => set({ validateOnly: e.target.checked })}
            />{' '}
            {t.validateOnly}
          </label>
          <button type="submit" className="primary" disabled={create.isPending}>
            {create.isPending ? t.submitting : t.submit}
          </button>
        </div>
      </form>
      {problem !== undefined ? (
        <p className="error" role="alert">
          {t[problem]}
        </p>
      ) : null}
      <RefusalNotice error={create.error} />
      {result?.response.decision !== undefined ? (
        <div className="remember-result" data-testid="remember-decision">
          <DecisionBox decision={result.response.decision} />
          {result.validateOnly ? <p className="muted">{t.validated}</p> : null}
          {!result.validateOnly &&
          result.response.memory !== undefined &&
          result.response.memory.name !== '' ? (
            <p>
              {t.openMemory}: <MemoryLink name={result.response.memory.name} />
            </p>
          ) : null}
        </div>
      ) : null}
    </Section>
  );
}
