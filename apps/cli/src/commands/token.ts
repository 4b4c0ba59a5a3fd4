import type { Command } from 'commander';
import { action, collect } from '../actions.js';
import { DEFAULT_TTL, LOCAL_TENANT, mintLocalToken } from '../auth.js';
import type { CliRuntime } from '../context.js';

interface TokenOptions {
  readonly tenant: string;
  readonly ttl: string;
  readonly org?: string[];
  readonly role?: string[];
}

/** `engram token`: a local token, compatible with `npm run token` (tenant `local`, HS256). */
export function registerToken(program: Command, io: CliRuntime): void {
  program
    .command('token')
    .description('print a bearer token signed with the local secret (the token is the last line)')
    .option('--tenant <tenant>', 'tenant claim', LOCAL_TENANT)
    .option('--ttl <ttl>', 'lifetime, e.g. 30m, 12h, 7d', DEFAULT_TTL)
    .option('--org <org>', 'org membership (repeatable)', collect)
    .option('--role <role>', 'role: admin, platform, service (repeatable)', collect)
    .addHelpText(
      'after',
      `
Example: engram token --user alice --org acme --role admin
Signed with ENGRAM_JWT_SECRET when set, else <ENGRAM_DATA_DIR>/jwt-secret (created by npm start).`,
    )
    .action(
      action(io, async ({ env, out, identity }, command) => {
        const options = command.opts<TokenOptions>();
        const subject = identity.user ?? env.user;
        const orgs = [...(identity.orgs ?? []), ...(options.org ?? [])];
        const roles = [...(identity.roles ?? []), ...(options.role ?? [])];
        const token = await mintLocalToken(env, {
          subject,
          tenantId: options.tenant,
          orgIds: orgs,
          roles,
          ttl: options.ttl,
        });
        out.document({ token, subject, tenant: options.tenant, orgs, roles, expiresIn: options.ttl });
        out.line(
          out.color.dim(
            `# user ${subject}, tenant ${options.tenant}, orgs ${orgs.join(',') || '-'}, roles ${roles.join(',') || '-'}, expires in ${options.ttl}`,
          ),
        );
        out.line(token);
      }),
    );
}
