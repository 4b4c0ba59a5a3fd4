import { Section } from '../components/ui.js';
import { defineMessages, useMessages } from '../lib/i18n.js';
import type { ViewProps } from '../lib/route.js';
import { routeHash } from '../lib/route.js';
import { currentToken, decodeClaims } from '../lib/session.js';
import { ForgetForm } from './forget/ForgetForm.js';
import { Receipt } from './forget/Receipt.js';
import { ReceiptList } from './forget/ReceiptList.js';
import './forget.css';

const text = defineMessages({
  en: {
    title: 'Forget me',
    request: 'Erase my data',
    receipt: 'Receipt',
    earlier: 'Earlier receipts',
    back: '← Forget me',
    noSubject: 'Your token names no subject, so there is no one to forget.',
  },
  zh: {
    title: '遗忘我',
    request: '删除我的数据',
    receipt: '回执',
    earlier: '之前的回执',
    back: '← 遗忘我',
    noSubject: '你的令牌未包含主体（sub），因此无法执行遗忘。',
  },
});

/** `#/forget`: explain, confirm, ForgetUser; `#/forget/<id>`: that receipt, followed to the end. */
export function ForgetView({ route }: ViewProps) {
  const t = useMessages(text);
  const token = currentToken();
  const subject = token !== undefined ? (decodeClaims(token)?.subject ?? '') : '';
  const id = route.rest[0];
  const receiptName = id !== undefined && id !== '' ? `forgetReceipts/${id}` : undefined;
  return (
    <>
      <h1>{t.title}</h1>
      {receiptName !== undefined ? (
        <>
          <p>
            <a href={routeHash('forget')}>{t.back}</a>
          </p>
          <Section id="forget-receipt" title={t.receipt}>
            <Receipt name={receiptName} />
          </Section>
        </>
      ) : (
        <Section id="forget-request" title={t.request}>
          {subject !== '' ? <ForgetForm subject={subject} /> : <p className="error">{t.noSubject}</p>}
        </Section>
      )}
      <Section id="forget-earlier" title={t.earlier}>
        <ReceiptList {...(receiptName !== undefined ? { current: receiptName } : {})} />
      </Section>
    </>
  );
}
