import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

function errorOf(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env, '/srv');
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('configuration', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({}, '/srv');
    expect(c.port).toBe(8080);
    expect(c.host).toBe('127.0.0.1');
    expect(c.dataDir).toBe('/srv/storage');
    expect(c.publicUrl).toBe('http://127.0.0.1:8080');
    expect(c.adminToken).toBeUndefined();
    expect(c.blobDriver).toBe('fs');
    expect(c.publicRead).toBe(false);
    expect(c.maxJsonBodyBytes).toBe(1024 * 1024);
    expect(c.retentionSweepIntervalSeconds).toBe(3600);
    expect(c.retentionBatchSize).toBe(100);
  });

  it('derives the public URL from the listen address and TLS', () => {
    expect(loadConfig({ HOST: '0.0.0.0', PORT: '9000' }, '/').publicUrl).toBe('http://127.0.0.1:9000');
    expect(loadConfig({ TERRACE_TLS_CERT: '/c', TERRACE_TLS_KEY: '/k' }, '/').publicUrl).toBe('https://127.0.0.1:8080');
    expect(loadConfig({ TERRACE_PUBLIC_URL: 'https://registry.example.com/' }, '/').publicUrl).toBe(
      'https://registry.example.com',
    );
  });

  it.each([
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ PORT: '-1' }, 'PORT'],
    [{ TERRACE_PUBLIC_URL: 'not a url' }, 'TERRACE_PUBLIC_URL'],
    [{ TERRACE_PUBLIC_URL: 'ftp://x.example.com' }, 'TERRACE_PUBLIC_URL'],
    [{ TERRACE_PUBLIC_URL: 'https://u:p@x.example.com' }, 'TERRACE_PUBLIC_URL'],
    [{ TERRACE_TLS_CERT: '/c' }, 'TERRACE_TLS_KEY'],
    [{ TERRACE_TLS_KEY: '/k' }, 'TERRACE_TLS_CERT'],
    [{ TERRACE_ADMIN_TOKEN: 'short' }, 'TERRACE_ADMIN_TOKEN'],
    [{ TERRACE_SECRET_KEY: 'short' }, 'TERRACE_SECRET_KEY'],
    [{ TERRACE_PUBLIC_READ: 'maybe' }, 'TERRACE_PUBLIC_READ'],
    [{ TERRACE_BLOB_DRIVER: 'gcs' }, 'TERRACE_BLOB_DRIVER'],
    [{ TERRACE_BLOB_DRIVER: 's3' }, 'TERRACE_S3_BUCKET'],
    [{ TERRACE_LOG_LEVEL: 'loud' }, 'TERRACE_LOG_LEVEL'],
    [{ TERRACE_MAX_BODY_BYTES: '10' }, 'TERRACE_MAX_BODY_BYTES'],
    [{ TERRACE_RETENTION_SWEEP_INTERVAL: '59' }, 'TERRACE_RETENTION_SWEEP_INTERVAL'],
    [{ TERRACE_RETENTION_BATCH_SIZE: '0' }, 'TERRACE_RETENTION_BATCH_SIZE'],
  ])('rejects %o naming %s', (env, variable) => {
    const err = errorOf(env);
    expect(err.variable).toBe(variable);
    expect(err.message.startsWith(`${variable}: `)).toBe(true);
  });

  it('configures the web UI: session lifetime and single sign-on, all three OIDC settings together', () => {
    const c = loadConfig({}, '/');
    expect(c.sessionTtlSeconds).toBe(28800);
    expect(c.oidc).toBeUndefined();
    expect(loadConfig({ TERRACE_SESSION_TTL: '300' }, '/').sessionTtlSeconds).toBe(300);
    expect(errorOf({ TERRACE_SESSION_TTL: '299' }).message).toBe('TERRACE_SESSION_TTL: must be between 300 and 2592000, got 299');
    const sso = { TERRACE_OIDC_ISSUER: 'https://id.example.com/', TERRACE_OIDC_CLIENT_ID: 'terrace', TERRACE_OIDC_CLIENT_SECRET: 's3cret' };
    expect(loadConfig(sso, '/').oidc).toEqual({ issuer: 'https://id.example.com', clientId: 'terrace', clientSecret: 's3cret', scopes: 'openid email profile' });
    expect(errorOf({ TERRACE_OIDC_ISSUER: 'https://id.example.com' }).message).toBe('TERRACE_OIDC_CLIENT_ID: is required when TERRACE_OIDC_ISSUER is set');
    expect(errorOf({ ...sso, TERRACE_OIDC_CLIENT_SECRET: '' }).message).toBe('TERRACE_OIDC_CLIENT_SECRET: is required when TERRACE_OIDC_ISSUER is set');
    expect(errorOf({ ...sso, TERRACE_OIDC_SCOPES: 'email profile' }).message).toBe('TERRACE_OIDC_SCOPES: must include openid');
  });

  it('maps groups to teams: a claim name and group=organization/team entries, together, with single sign-on', () => {
    const sso = { TERRACE_OIDC_ISSUER: 'https://id.example.com', TERRACE_OIDC_CLIENT_ID: 'terrace', TERRACE_OIDC_CLIENT_SECRET: 's3cret' };
    const c = loadConfig({ ...sso, TERRACE_OIDC_GROUPS_CLAIM: 'groups', TERRACE_OIDC_GROUP_TEAMS: ' platform=acme/platform ;cn=ops,ou=groups,dc=example=acme/owners\nplatform=beta/devs;' }, '/');
    expect(c.oidc).toEqual({
      issuer: 'https://id.example.com',
      clientId: 'terrace',
      clientSecret: 's3cret',
      scopes: 'openid email profile',
      groupsClaim: 'groups',
      groupTeams: [
        { group: 'platform', organization: 'acme', team: 'platform' },
        { group: 'cn=ops,ou=groups,dc=example', organization: 'acme', team: 'owners' },
        { group: 'platform', organization: 'beta', team: 'devs' },
      ],
    });
    expect(errorOf({ ...sso, TERRACE_OIDC_GROUPS_CLAIM: 'groups' }).message).toBe(
      'TERRACE_OIDC_GROUP_TEAMS: is required when TERRACE_OIDC_GROUPS_CLAIM is set: which group puts a user in which team',
    );
    expect(errorOf({ ...sso, TERRACE_OIDC_GROUP_TEAMS: 'a=acme/x' }).message).toBe(
      'TERRACE_OIDC_GROUPS_CLAIM: is required when TERRACE_OIDC_GROUP_TEAMS is set: the claim that lists the groups (often "groups")',
    );
    expect(errorOf({ TERRACE_OIDC_GROUPS_CLAIM: 'groups', TERRACE_OIDC_GROUP_TEAMS: 'a=acme/x' }).message).toBe('TERRACE_OIDC_GROUPS_CLAIM: needs single sign-on: set TERRACE_OIDC_ISSUER too');
    for (const bad of ['platform', '=acme/x', 'a=acme', 'a=acme/x/y', 'a=acme/-x', 'a=/x']) {
      expect(errorOf({ ...sso, TERRACE_OIDC_GROUPS_CLAIM: 'groups', TERRACE_OIDC_GROUP_TEAMS: `ok=acme/x;${bad}` }).message).toBe(
        `TERRACE_OIDC_GROUP_TEAMS: entry 2 ("${bad}") must be group=organization/team, e.g. platform-engineers=acme/platform`,
      );
    }
    expect(errorOf({ ...sso, TERRACE_OIDC_GROUPS_CLAIM: 'groups', TERRACE_OIDC_GROUP_TEAMS: ' ; ' }).message).toBe('TERRACE_OIDC_GROUP_TEAMS: names no group=organization/team entry');
  });

  it('parses booleans in the usual spellings', () => {
    expect(loadConfig({ TERRACE_PUBLIC_READ: 'true' }, '/').publicRead).toBe(true);
    expect(loadConfig({ TERRACE_PUBLIC_READ: 'ON' }, '/').publicRead).toBe(true);
    expect(loadConfig({ TERRACE_PUBLIC_READ: '0' }, '/').publicRead).toBe(false);
  });
});
