import { useQuery } from '@connectrpc/connect-query';
import { Health, HealthCheckResponse_ServingStatus } from '@engram/contracts/grpc';
import { Tag } from '../../components/ui.js';
import { describeError } from '../../lib/errors.js';
import { defineMessages, useMessages } from '../../lib/i18n.js';
import { SERVICE_NAMES, serviceLabel, servingTone } from './model.js';

const text = defineMessages({
  en: {
    service: 'Service',
    grpcName: 'gRPC name',
    status: 'Status',
    checking: 'checking…',
    caption: 'Health per service',
  },
  zh: {
    service: '服务',
    grpcName: 'gRPC 名称',
    status: '状态',
    checking: '检查中…',
    caption: '各服务健康状态',
  },
});

function HealthRow({ service }: { readonly service: string }) {
  const t = useMessages(text);
  const check = useQuery(Health.method.check, { service }, { refetchInterval: 10_000, staleTime: 0 });
  let status: string;
  if (check.isPending) status = t.checking;
  else if (check.isError)
    status = describeError(check.error).code === 'NOT_FOUND' ? 'SERVICE_UNKNOWN' : 'UNREACHABLE';
  else
    status =
      (HealthCheckResponse_ServingStatus as Readonly<Record<number, string | undefined>>)[
        check.data.status
      ] ?? String(check.data.status);
  return (
    <tr data-service={service}>
      <th scope="row">{serviceLabel(service)}</th>
      <td>
        <code>{service}</code>
      </td>
      <td data-status={status}>
        <Tag tone={servingTone(status)}>{status}</Tag>
        {check.isError ? <span className="muted"> {describeError(check.error).message}</span> : null}
      </td>
    </tr>
  );
}

/** grpc.health.v1.Health/Check for each of the four services (public: no token needed). */
export function HealthTable() {
  const t = useMessages(text);
  return (
    <table className="health-table">
      <caption className="sr-only">{t.caption}</caption>
      <thead>
        <tr>
          <th scope="col">{t.service}</th>
          <th scope="col">{t.grpcName}</th>
          <th scope="col">{t.status}</th>
        </tr>
      </thead>
      <tbody>
        {SERVICE_NAMES.map((s) => (
          <HealthRow key={s} service={s} />
        ))}
      </tbody>
    </table>
  );
}
