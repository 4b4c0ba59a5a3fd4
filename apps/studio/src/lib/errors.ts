import { Code, ConnectError } from '@connectrpc/connect';
import { ErrorInfoSchema, RetryInfoSchema } from '@engram/contracts/grpc';
import type { Lang } from './lang.js';

/** What the Studio shows of a failed call: the gRPC code, the ErrorInfo reason and a sentence. */
export interface DescribedError {
  /** The gRPC code's name, e.g. `PERMISSION_DENIED`. */
  readonly code: string;
  /** The ErrorInfo reason (`NOT_OWNER`), or the code's name when the server sent none. */
  readonly reason: string;
  /** The server's own message (never memory text: the services keep contents out of errors). */
  readonly message: string;
  readonly metadata: Readonly<Record<string, string>>;
  /** Seconds to wait before retrying, from RetryInfo. */
  readonly retryAfterSeconds?: number;
}

/** The gRPC name of a Connect code: `Code.PermissionDenied` → `PERMISSION_DENIED`. */
export function codeName(code: Code): string {
  return ((Code[code] as string | undefined) ?? 'UNKNOWN').replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();
}

/** Reads a failed call (or anything thrown) into a {@link DescribedError}. */
export function describeError(error: unknown): DescribedError {
  const failure = ConnectError.from(error);
  const info = failure.findDetails(ErrorInfoSchema)[0];
  const retry = failure.findDetails(RetryInfoSchema)[0];
  const code = codeName(failure.code);
  const delay = retry?.retryDelay;
  return {
    code,
    reason: info !== undefined && info.reason !== '' ? info.reason : code,
    message: failure.rawMessage,
    metadata: { ...(info?.metadata ?? {}) },
    ...(delay !== undefined ? { retryAfterSeconds: Number(delay.seconds) + delay.nanos / 1e9 } : {}),
  };
}

type Sentences = Readonly<Record<string, string>>;

const SENTENCES: Readonly<Record<Lang, Sentences>> = {
  en: {
    TOKEN_MISSING: 'You are not signed in.',
    TOKEN_MALFORMED: 'The token is not a valid bearer token.',
    TOKEN_EXPIRED: 'Your token has expired: sign in again.',
    TOKEN_NOT_YET_VALID: 'The token is not valid yet (check the clocks).',
    TOKEN_SIGNATURE_INVALID: 'The token was not signed by a key this server trusts.',
    TOKEN_ALGORITHM_NOT_ALLOWED: 'The token uses a signing algorithm this server refuses.',
    TOKEN_CLAIM_INVALID: 'The token lacks a claim Engram needs (sub, tenant).',
    TOKEN_AUDIENCE_OR_ISSUER_MISMATCH: 'The token was issued for another audience or by another issuer.',
    TOKEN_LIFETIME_TOO_LONG: 'The token lives longer than this server allows.',
    TOKEN_SERVICE_KEY_REQUIRED: 'Only the service key may grant the service role.',
    SCOPE_NOT_ALLOWED: 'You may not use this scope (organisation membership or role missing).',
    ROLE_REQUIRED: 'This needs a role your token does not have (for reviews: admin).',
    NOT_OWNER: 'This belongs to another user.',
    FIELD_REQUIRED: 'A required field is empty.',
    FIELD_INVALID: 'A field has a value the server refuses.',
    NAME_INVALID: 'The resource name is malformed.',
    PAGE_TOKEN_INVALID: 'The page token is stale: start from the first page.',
    UPDATE_MASK_INVALID: 'The update names a field that cannot be changed.',
    TIME_RANGE_INVALID: 'The time range is invalid (start after end?).',
    MEDIA_TYPE_UNSUPPORTED: 'This file type is not supported.',
    STREAM_PROTOCOL_VIOLATION: 'The upload stream broke the protocol (header, parts, size).',
    REQUEST_ID_REUSED: 'This request id was already used for a different request.',
    BUDGET_TOO_SMALL: 'The token budget is too small for the required context.',
    MEMORY_REJECTED: 'Governance rejected this memory (see the rule in the details).',
    MESSAGE_MALFORMED: 'A message is malformed.',
    IMPORT_RECORD_INVALID: 'A line of the import is not a valid record (see its line and field).',
    IMPORT_FORMAT_UNSUPPORTED: 'This is not an Engram export this server can read (format or version).',
    IMPORT_CHECKSUM_MISMATCH: 'The import was truncated or edited: its checksum does not match.',
    RESOURCE_NOT_FOUND: 'Not found (or not visible to you).',
    RESOURCE_ALREADY_EXISTS: 'It already exists.',
    ETAG_MISMATCH: 'Someone changed it since you loaded it: reload and try again.',
    MODEL_NOT_CONFIGURED: 'No chat model is configured on the server.',
    SESSION_CLOSED: 'The session is closed.',
    STATE_CONFLICT: 'It is in a state that does not allow this.',
    FORGET_RECEIPT_NOT_PENDING: 'This forget request is no longer pending.',
    IMPORT_CONFLICT: 'The import would overwrite content that belongs to someone else.',
    MESSAGE_TOO_LARGE: 'The request is larger than the server accepts.',
    STREAM_TOO_LONG: 'The stream has too many parts.',
    DOCUMENT_TOO_LARGE: 'The document is larger than the limit.',
    QUOTA_EXCEEDED: 'A storage quota is used up.',
    BATCH_TOO_LARGE: 'Too many items in one request.',
    RATE_LIMITED: 'Too many requests: wait a moment.',
    OVERLOADED: 'The server is busy: try again shortly.',
    DEPENDENCY_UNAVAILABLE: 'A service Engram depends on is unavailable.',
    SHUTTING_DOWN: 'The server is shutting down.',
    DEADLINE_EXCEEDED: 'The call took too long.',
    CANCELLED: 'The call was cancelled.',
    NOT_IMPLEMENTED: 'The server does not implement this.',
    INTERNAL: 'The server failed unexpectedly (see its logs).',
    UNAVAILABLE: 'The server cannot be reached.',
    UNKNOWN: 'Something went wrong.',
  },
  zh: {
    TOKEN_MISSING: '尚未登录。',
    TOKEN_MALFORMED: '令牌不是有效的 Bearer 令牌。',
    TOKEN_EXPIRED: '令牌已过期，请重新登录。',
    TOKEN_NOT_YET_VALID: '令牌尚未生效（请检查时钟）。',
    TOKEN_SIGNATURE_INVALID: '令牌的签名密钥不受此服务器信任。',
    TOKEN_ALGORITHM_NOT_ALLOWED: '令牌使用了服务器拒绝的签名算法。',
    TOKEN_CLAIM_INVALID: '令牌缺少 Engram 需要的声明（sub、tenant）。',
    TOKEN_AUDIENCE_OR_ISSUER_MISMATCH: '令牌的受众或签发者不匹配。',
    TOKEN_LIFETIME_TOO_LONG: '令牌有效期超过服务器允许的上限。',
    TOKEN_SERVICE_KEY_REQUIRED: '只有服务密钥可以授予 service 角色。',
    SCOPE_NOT_ALLOWED: '你无权使用此范围（缺少组织成员身份或角色）。',
    ROLE_REQUIRED: '此操作需要你的令牌没有的角色（审核需要 admin）。',
    NOT_OWNER: '这属于另一位用户。',
    FIELD_REQUIRED: '有必填字段为空。',
    FIELD_INVALID: '有字段的值被服务器拒绝。',
    NAME_INVALID: '资源名称格式错误。',
    PAGE_TOKEN_INVALID: '分页令牌已失效，请从第一页开始。',
    UPDATE_MASK_INVALID: '更新了不可修改的字段。',
    TIME_RANGE_INVALID: '时间范围无效（开始晚于结束？）。',
    MEDIA_TYPE_UNSUPPORTED: '不支持此文件类型。',
    STREAM_PROTOCOL_VIOLATION: '上传流违反了协议（头、分段或大小）。',
    REQUEST_ID_REUSED: '此请求 ID 已用于另一个请求。',
    BUDGET_TOO_SMALL: '令牌预算太小，放不下必需的上下文。',
    MEMORY_REJECTED: '治理规则拒绝了这条记忆（规则见详情）。',
    MESSAGE_MALFORMED: '有消息格式错误。',
    IMPORT_RECORD_INVALID: '导入文件中有一行不是有效记录（见行号和字段）。',
    IMPORT_FORMAT_UNSUPPORTED: '这不是此服务器能读取的 Engram 导出（格式或版本）。',
    IMPORT_CHECKSUM_MISMATCH: '导入文件被截断或修改：校验和不一致。',
    RESOURCE_NOT_FOUND: '未找到（或你无权查看）。',
    RESOURCE_ALREADY_EXISTS: '已经存在。',
    ETAG_MISMATCH: '加载后已被他人修改，请刷新后重试。',
    MODEL_NOT_CONFIGURED: '服务器未配置对话模型。',
    SESSION_CLOSED: '会话已关闭。',
    STATE_CONFLICT: '当前状态不允许此操作。',
    FORGET_RECEIPT_NOT_PENDING: '此遗忘请求已不在等待中。',
    IMPORT_CONFLICT: '导入会覆盖属于他人的内容。',
    MESSAGE_TOO_LARGE: '请求超过服务器接受的大小。',
    STREAM_TOO_LONG: '流的分段过多。',
    DOCUMENT_TOO_LARGE: '文档超过大小上限。',
    QUOTA_EXCEEDED: '存储配额已用完。',
    BATCH_TOO_LARGE: '一次请求中的条目过多。',
    RATE_LIMITED: '请求过于频繁，请稍候。',
    OVERLOADED: '服务器繁忙，请稍后重试。',
    DEPENDENCY_UNAVAILABLE: 'Engram 依赖的服务不可用。',
    SHUTTING_DOWN: '服务器正在关闭。',
    DEADLINE_EXCEEDED: '调用超时。',
    CANCELLED: '调用已取消。',
    NOT_IMPLEMENTED: '服务器未实现此功能。',
    INTERNAL: '服务器发生意外错误（请查看日志）。',
    UNAVAILABLE: '无法连接服务器。',
    UNKNOWN: '出了点问题。',
  },
};

/** A human sentence for `described` in `lang`: by reason, else by code, else a generic one. */
export function errorSentence(described: DescribedError, lang: Lang): string {
  const sentences: Sentences = SENTENCES[lang];
  return sentences[described.reason] ?? sentences[described.code] ?? sentences['UNKNOWN'] ?? '';
}
