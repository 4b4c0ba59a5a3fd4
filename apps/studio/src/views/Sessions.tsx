import type { ViewProps } from '../lib/route.js';
import { parseSequence } from './sessions/model.js';
import { SessionDetail } from './sessions/SessionDetail.js';
import { SessionList } from './sessions/SessionList.js';
import './sessions.css';

/**
 * `#/sessions`: the signed-in user's sessions. `#/sessions/<id>[?message=<sequence>]`: one
 * session's timeline with MemCell boundaries, extraction decisions and session state; the
 * `message` parameter scrolls to and highlights that message.
 */
export function SessionsView({ route }: ViewProps) {
  const id = route.rest[0];
  if (id === undefined || id === '') return <SessionList />;
  return <SessionDetail key={id} id={id} target={parseSequence(route.query.get('message'))} />;
}
