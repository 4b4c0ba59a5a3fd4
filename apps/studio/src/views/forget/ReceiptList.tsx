import { useInfiniteQuery } from '@connectrpc/connect-query';
import { ForgetReceiptState, GovernanceService } from '@engram/contracts/governance';
import { LoadMore } from '../../components/LoadMore.js';
import { Empty, ErrorNotice, Loading, Tag } from '../../components/ui.js';
import { enumName, formatCount, formatTime, shortName } from '../../lib/format.js';
import { defineMessages, useLang, useMessages } from '../../lib/i18n.js';
import { PAGED } from '../../lib/paging.js';
import { routeHash } from '../../lib/route.js';
import { receiptTone, totalErased } from './model.js';

const text = defineMessages({
  en: {
    receipt: 'Receipt',
    subject: 'Subject',
    state: 'State',
    erased: 'Items erased',
    created: 'Requested',
    completed: 'Completed',
    none: 'No forget requests yet.',
    caption: 'Earlier forget receipts, newest first',
  },
  zh: {
    receipt: '回执',
    subject: '对象',
    state: '状态',
    erased: '已删除条目',
    created: '请求时间',
    completed: '完成时间',
    none: '还没有遗忘请求。',
    caption: '之前的遗忘回执，最新的在前',
  },
});

/** ListForgetReceipts: the receipts the caller requested or that concern them. */
export function ReceiptList({ current }: { readonly current?: string }) {
  const t = useMessages(text);
  const { lang } = useLang();
  const list = useInfiniteQuery(
    GovernanceService.method.listForgetReceipts,
    { pageSize: 50, pageToken: '' },
    {
      // While a receipt is PENDING its counts move: follow them until every one is COMPLETED.
      refetchInterval: (q) =>
        q.state.error === null &&
        (q.state.data?.pages ?? []).some((p) =>
          p.forgetReceipts.some((r) => r.state === ForgetReceiptState.PENDING),
        )
          ? 2_000
          : false,
      ...PAGED,
    },
  );
  const pageError = list.isFetchNextPageError ? list.error : null;
  if (list.isPending) return <Loading />;
  if (list.isError) return <ErrorNotice error={list.error} />;
  const receipts = list.data.pages.flatMap((p) => p.forgetReceipts);
  if (receipts.length === 0) return <Empty>{t.none}</Empty>;
  return (
    <>
      <table className="receipts">
        <caption className="sr-only">{t.caption}</caption>
        <thead>
          <tr>
            <th scope="col">{t.receipt}</th>
            <th scope="col">{t.subject}</th>
            <th scope="col">{t.state}</th>
            <th scope="col">{t.erased}</th>
            <th scope="col">{t.created}</th>
            <th scope="col">{t.completed}</th>
          </tr>
        </thead>
        <tbody>
          {receipts.map((r) => {
            const state = enumName(ForgetReceiptState, r.state);
            return (
              <tr key={r.name} data-receipt={r.name} className={r.name === current ? 'selected' : undefined}>
                <td>
                  <a href={routeHash('forget', [shortName(r.name)])}>
                    <code>{shortName(r.name)}</code>
                  </a>
                </td>
                <td>{r.subject}</td>
                <td>
                  <Tag tone={receiptTone(state)}>{state}</Tag>
                </td>
                <td>{formatCount(totalErased(r.counts), lang)}</td>
                <td>{formatTime(r.createTime, lang)}</td>
                <td>{formatTime(r.completeTime, lang)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <LoadMore pages={list} />
      <ErrorNotice error={pageError} />
    </>
  );
}
