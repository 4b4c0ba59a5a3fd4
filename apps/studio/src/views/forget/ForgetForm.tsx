import { useMutation } from '@connectrpc/connect-query';
import { useQueryClient } from '@tanstack/react-query';
import { useState, type SyntheticEvent } from 'react';
import { GovernanceService } from '@engram/contracts/governance';
import { ErrorNotice } from '../../components/ui.js';
import { shortName } from '../../lib/format.js';
import { defineMessages, useMessages } from '../../lib/i18n.js';
import { navigate, routeHash } from '../../lib/route.js';
import { newRequestId } from '../system/model.js';
import { confirmationPhrase, phraseMatches } from './model.js';

const text = defineMessages({
  en: {
    lead: (subject: string) => `This erases everything this tenant holds about ${subject}, for good:`,
    memories:
      'every memory you own (any status or scope, including organisation memories you created), and your extraction jobs;',
    revisions:
      'the history of those memories, reduced to content-free audit records; where you reviewed others’ memories, your name is replaced by the receipt’s;',
    ingestion: 'your documents and their chunks, your sessions with their messages and MemCells;',
    context: 'the context service’s summaries, key points and open loops of your sessions;',
    index: 'the vector index points of all of these (removed by the indexer, counted on the receipt).',
    after:
      'Content written after the request is not covered. A receipt (without any content) is kept as proof.',
    reason: 'Reason (optional, recorded on the receipt; do not include the content being erased)',
    type: (phrase: string) => `Type “${phrase}” to confirm`,
    submit: 'Forget me',
  },
  zh: {
    lead: (subject: string) => `这将永久删除此租户中关于 ${subject} 的一切：`,
    memories: '你拥有的每条记忆（任何状态或范围，包括你创建的组织记忆），以及你的提取任务；',
    revisions:
      '这些记忆的历史，被精简为不含内容的审计记录；你审核过他人记忆的地方，你的名字将被替换为回执名称；',
    ingestion: '你的文档及其分块、你的会话及其消息和 MemCell；',
    context: '上下文服务中你的会话摘要、要点和未决事项；',
    index: '以上所有内容在向量索引中的点（由索引器删除，并计入回执）。',
    after: '请求之后写入的内容不在此范围内。系统会保留一张（不含任何内容的）回执作为证明。',
    reason: '原因（可选，记录在回执上；不要包含要删除的内容）',
    type: (phrase: string) => `输入“${phrase}”以确认`,
    submit: '遗忘我',
  },
});

/** Explains the erasure, asks for the typed phrase, then ForgetUser and on to the receipt. */
export function ForgetForm({ subject }: { readonly subject: string }) {
  const t = useMessages(text);
  const queryClient = useQueryClient();
  const phrase = confirmationPhrase(subject);
  const [typed, setTyped] = useState('');
  const [reason, setReason] = useState('');
  const forget = useMutation(GovernanceService.method.forgetUser, {
    onSuccess: async (answer) => {
      await queryClient.invalidateQueries();
      const name = answer.forgetReceipt?.name;
      if (name !== undefined) navigate(routeHash('forget', [shortName(name)]));
    },
  });
  const ready = phraseMatches(typed, phrase) && !forget.isPending;
  const onSubmit = (e: SyntheticEvent) => {
    e.preventDefault();
    if (!ready) return;
    forget.mutate({ subject, reason: reason.trim(), requestId: newRequestId() });
  };
  return (
    <form className="forget-form" onSubmit={onSubmit}>
      <p>
        <strong>{t.lead(subject)}</strong>
      </p>
      <ul>
        <li>{t.memories}</li>
        <li>{t.revisions}</li>
        <li>{t.ingestion}</li>
        <li>{t.context}</li>
        <li>{t.index}</li>
      </ul>
      <p className="muted">{t.after}</p>
      <label className="block">
        {t.reason}
        <input name="reason" value={reason} maxLength={1000} onChange={(e) => setReason(e.target.value)} />
      </label>
      <label className="block">
        {t.type(phrase)}
        <input
          name="confirm"
          value={typed}
          autoComplete="off"
          spellCheck={false}
          onChange={(e) => setTyped(e.target.value)}
        />
      </label>
      <button type="submit" className="danger" disabled={!ready}>
        {t.submit}
      </button>
      <ErrorNotice error={forget.error} />
    </form>
  );
}
