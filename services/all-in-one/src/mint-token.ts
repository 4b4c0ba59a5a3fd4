import { parseArgs } from 'node:util';
import {
  LOCAL_SERVICE_SECRET_FILE,
  ROLES,
  loadOrCreateLocalSecret,
  mintToken,
  runMain,
  type Role,
} from '@engram/runtime';
import { loadConfig } from './config.js';

const usage = `usage: npm run token -- [--user U] [--tenant T] [--org O]... [--role admin|platform|service]... [--ttl 1h]

Prints a bearer token signed with the local secret (ENGRAM_JWT_SECRET when set, else
<ENGRAM_DATA_DIR>/jwt-secret, created by npm start); with --role service, with the service secret
(ENGRAM_SERVICE_JWT_SECRET, else <ENGRAM_DATA_DIR>/service-jwt-secret). For local use only.`;

runMain(async () => {
  const { values } = parseArgs({
    options: {
      user: { type: 'string', default: process.env['ENGRAM_USER'] ?? 'local' },
      tenant: { type: 'string', default: 'local' },
      org: { type: 'string', multiple: true, default: [] },
      role: { type: 'string', multiple: true, default: [] },
      ttl: { type: 'string', default: '12h' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${usage}\n`);
    return;
  }
  const roles = values.role.filter((r): r is Role => (ROLES as readonly string[]).includes(r));
  if (roles.length !== values.role.length)
    throw new Error(`unknown role; expected one of ${ROLES.join(', ')}`);
  const config = loadConfig(process.env);
  // The service role is granted by the service key only (decision 0024).
  const service = roles.includes('service');
  const configured = service ? config.ENGRAM_SERVICE_JWT_SECRET : config.ENGRAM_JWT_SECRET;
  const secret =
    configured !== undefined
      ? new TextEncoder().encode(configured)
      : loadOrCreateLocalSecret(config.ENGRAM_DATA_DIR, service ? LOCAL_SERVICE_SECRET_FILE : undefined);
  const token = await mintToken(
    { subject: values.user, tenantId: values.tenant, orgIds: values.org, roles },
    { algorithm: 'HS256', secret },
    { expiresIn: values.ttl, issuer: config.ENGRAM_JWT_ISSUER, audience: config.ENGRAM_JWT_AUDIENCE },
  );
  process.stdout.write(`${token}\n`);
});
