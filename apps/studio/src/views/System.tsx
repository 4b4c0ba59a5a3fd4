import { Section } from '../components/ui.js';
import { defineMessages, useMessages } from '../lib/i18n.js';
import type { ViewProps } from '../lib/route.js';
import { HealthTable } from './system/Health.js';
import { IndexStatusPanel } from './system/IndexStatus.js';
import { Reindex } from './system/Reindex.js';
import './system.css';

const text = defineMessages({
  en: {
    title: 'System',
    health: 'Health per service',
    healthHint: 'grpc.health.v1 Check for each service on this server, refreshed every 10 s.',
    index: 'Index status',
    indexHint:
      'Tenant-wide figures of the vector index (GetIndexStatus, admin role); the server caches them up to 10 s.',
    reindex: 'Reindex',
    metrics: 'Metrics',
    metricsText:
      'Prometheus metrics are served on a separate port, not this one. The all-in-one prints their URL when it starts: the “metrics” field of its “listening” log line (port 9464 by default; ENGRAM_METRICS_PORT chooses another, “off” disables them). The browser cannot learn that address, so there is no link here.',
  },
  zh: {
    title: '系统',
    health: '各服务健康状态',
    healthHint: '对此服务器上每个服务进行 grpc.health.v1 Check，每 10 秒刷新。',
    index: '索引状态',
    indexHint: '向量索引的租户级数据（GetIndexStatus，需要 admin 角色）；服务器最多缓存 10 秒。',
    reindex: '重建索引',
    metrics: '指标',
    metricsText:
      'Prometheus 指标在单独的端口提供，而不是此端口。all-in-one 启动时会打印其地址：“listening” 日志行中的 “metrics” 字段（默认端口 9464；ENGRAM_METRICS_PORT 可指定其他端口，“off” 表示关闭）。浏览器无法得知该地址，因此这里不提供链接。',
  },
});

export function SystemView(_props: ViewProps) {
  const t = useMessages(text);
  return (
    <>
      <h1>{t.title}</h1>
      <Section id="system-health" title={t.health}>
        <p className="muted">{t.healthHint}</p>
        <HealthTable />
      </Section>
      <Section id="system-index" title={t.index}>
        <p className="muted">{t.indexHint}</p>
        <IndexStatusPanel />
      </Section>
      <Section id="system-reindex" title={t.reindex}>
        <Reindex />
      </Section>
      <Section id="system-metrics" title={t.metrics}>
        <p>{t.metricsText}</p>
      </Section>
    </>
  );
}
