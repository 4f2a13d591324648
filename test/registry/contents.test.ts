import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VPC_MODULE } from '../fixtures/modules.js';
import { createOrganization, publish } from '../helpers/registry.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  await createOrganization(t, 'acme');
  await publish(t, 'acme', 'vpc', 'aws', '1.0.0', VPC_MODULE);
});
afterAll(async () => {
  await t.close();
});

describe('inspection of a published module', () => {
  it('records every input with type, description, literal default, required and sensitive', async () => {
    const r = await t.api('GET', '/v1/modules/acme/vpc/aws/1.0.0');
    expect(r.status).toBe(200);
    expect(r.json.root.inputs).toEqual([
      { name: 'azs', type: 'list(string)', description: '', default: '["eu-west-1a","eu-west-1b"]', required: false, sensitive: false },
      { name: 'cidr', type: 'string', description: 'The VPC CIDR block.', default: '"10.0.0.0/16"', required: false, sensitive: false },
      { name: 'db_password', type: 'string', description: '', default: '', required: true, sensitive: true },
      { name: 'enable_nat', type: 'bool', description: '', default: 'true', required: false, sensitive: false },
      { name: 'name', type: 'string', description: 'Name prefix for every resource.', default: '', required: true, sensitive: false },
      { name: 'nat_count', type: 'number', description: '', default: '1', required: false, sensitive: false },
      {
        name: 'subnets',
        type: expect.stringMatching(/^list\(object\(\{\s*cidr\s*=\s*string\s+public\s*=\s*optional\(bool, false\)\s*\}\)\)$/),
        description: 'Subnets to create.',
        default: '',
        required: true,
        sensitive: false,
      },
      { name: 'tags', type: 'map(string)', description: '', default: '{}', required: false, sensitive: false },
    ]);
  });

  it('records outputs, providers, module calls and resources of the root', async () => {
    const { json } = await t.api('GET', '/v1/modules/acme/vpc/aws/1.0.0');
    expect(json.root.path).toBe('');
    expect(json.root.empty).toBe(false);
    expect(json.root.readme).toBe(VPC_MODULE['README.md']);
    expect(json.root.outputs).toEqual([
      { name: 'db_password', description: '', sensitive: true },
      { name: 'vpc_id', description: 'The VPC id.', sensitive: false },
    ]);
    expect(json.root.provider_dependencies).toEqual([
      { name: 'aws', namespace: 'hashicorp', source: 'hashicorp/aws', version: '>= 5.0, < 6.0' },
      { name: 'random', namespace: 'hashicorp', source: 'hashicorp/random', version: '' },
    ]);
    expect(json.root.dependencies).toEqual([
      { name: 'labels', source: 'cloudposse/label/null', version: '0.25.0' },
      { name: 'subnets', source: './modules/subnets', version: '' },
    ]);
    expect(json.root.resources).toEqual([
      { name: 'this', type: 'aws_vpc' },
      { name: 'suffix', type: 'random_id' },
      { name: 'current', type: 'data.aws_region' },
    ].sort((a, b) => `${a.type}.${a.name}`.localeCompare(`${b.type}.${b.name}`)));
  });

  it('records submodules and examples, with implied providers', async () => {
    const { json } = await t.api('GET', '/v1/modules/acme/vpc/aws');
    expect(json.submodules.map((s: { path: string }) => s.path)).toEqual(['modules/flow-logs', 'modules/subnets']);
    const [flow, subnets] = json.submodules;
    expect(flow.inputs).toEqual([{ name: 'log_group', type: 'string', description: '', default: '"vpc-flow"', required: false, sensitive: false }]);
    expect(flow.provider_dependencies).toEqual([{ name: 'aws', namespace: 'hashicorp', source: 'hashicorp/aws', version: '>= 5.0' }]);
    expect(subnets.readme).toBe('# Subnets\n\nSubnets for the VPC.\n');
    expect(subnets.outputs).toEqual([{ name: 'subnet_ids', description: '', sensitive: false }]);
    // No required_providers: implied from the resource type.
    expect(subnets.provider_dependencies).toEqual([{ name: 'aws', namespace: 'hashicorp', source: 'hashicorp/aws', version: '' }]);
    expect(json.examples).toHaveLength(1);
    expect(json.examples[0]).toMatchObject({ path: 'examples/complete', dependencies: [{ name: 'vpc', source: '../../', version: '' }] });
    expect(json.providers).toEqual(['aws']);
    expect(json.versions).toEqual(['1.0.0']);
  });

  it('serves root providers, dependencies and submodules on /versions', async () => {
    const { json } = await t.api('GET', '/v1/modules/acme/vpc/aws/versions');
    const v = json.modules[0].versions[0];
    expect(v.root.providers).toEqual([
      { name: 'aws', namespace: 'hashicorp', source: 'hashicorp/aws', version: '>= 5.0, < 6.0' },
      { name: 'random', namespace: 'hashicorp', source: 'hashicorp/random', version: '' },
    ]);
    expect(v.root.dependencies).toEqual([
      { name: 'labels', source: 'cloudposse/label/null', version: '0.25.0' },
      { name: 'subnets', source: './modules/subnets', version: '' },
    ]);
    expect(v.submodules).toEqual([
      { path: 'modules/flow-logs', providers: [{ name: 'aws', namespace: 'hashicorp', source: 'hashicorp/aws', version: '>= 5.0' }], dependencies: [] },
      { path: 'modules/subnets', providers: [{ name: 'aws', namespace: 'hashicorp', source: 'hashicorp/aws', version: '' }], dependencies: [] },
    ]);
  });

  it('takes the description from the README when the publisher gave none', async () => {
    const { json } = await t.api('GET', '/v1/modules/acme/vpc/aws');
    expect(json.description).toBe('Creates a VPC with public and private subnets across availability zones.');
    const list = await t.api('GET', '/v1/modules/acme');
    expect(list.json.modules[0].description).toBe(json.description);
  });

  it('prefers the description given at publish', async () => {
    await t.api('POST', '/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws/versions', {
      body: { data: { type: 'registry-module-versions', attributes: { version: '1.1.0', description: 'Given by CI.' } } },
    }).then(async (r) => {
      const { upload } = await import('../helpers/registry.js');
      const { moduleTarball } = await import('../helpers/registry.js');
      expect((await upload(r.json.data.links.upload, await moduleTarball(VPC_MODULE))).status).toBe(200);
    });
    expect((await t.api('GET', '/v1/modules/acme/vpc/aws/1.1.0')).json.description).toBe('Given by CI.');
  });

  it('shows the same interface on the registry-modules API version resource', async () => {
    const r = await t.api('GET', '/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws/version?module_version=1.0.0');
    expect(r.status).toBe(200);
    const a = r.json.data.attributes;
    expect(a.root.inputs).toHaveLength(8);
    expect(a.submodules).toHaveLength(2);
    expect(a.examples).toHaveLength(1);
    expect(a.warnings).toEqual([]);
  });
});

describe('hostile and broken inputs end as warnings', () => {
  const cases: [string, Record<string, string>, RegExp][] = [
    ['invalid HCL', { 'main.tf': 'variable "x" {\n', 'ok.tf': 'variable "y" {}\n' }, /main\.tf.*Unclosed configuration block/],
    ['a malformed module block', { 'main.tf': 'module "m" {\n  source = var.dynamic\n}\nvariable "y" {}\n' }, /module "m" has no literal source/],
    ['a binary file named .tf', { 'main.tf': 'variable "y" {}\n', 'blob.tf': '\u0000\u0001\u0002binary' }, /blob\.tf is not UTF-8 text/],
    ['deeply nested expressions', { 'main.tf': `locals {\n  x = ${'['.repeat(20_000)}${']'.repeat(20_000)}\n}\n`, 'ok.tf': 'variable "y" {}\n' }, /main\.tf: .*(stack|nest)/i],
    // Random text: one repeated character would be refused as a decompression bomb before inspection.
    ['a 50 MB .tf file', { 'main.tf': 'variable "y" {}\n', 'huge.tf': `# ${randomBytes(38 * 1024 * 1024).toString('base64')}\n` }, /huge\.tf was not read: it is \d+ bytes/],
  ];
  it.each(cases)('%s', async (name, files, warning) => {
    const slug = name.replace(/[^a-z0-9]+/gi, '').toLowerCase().slice(0, 20);
    await publish(t, 'acme', slug, 'aws', '1.0.0', files);
    const v = await t.api('GET', `/api/v2/organizations/acme/registry-modules/private/acme/${slug}/aws/version?module_version=1.0.0`);
    expect(v.json.data.attributes.status).toBe('ok');
    const warnings: string[] = v.json.data.attributes.warnings;
    expect(warnings.some((w) => warning.test(w)), warnings.join('\n')).toBe(true);
    // The readable rest of the module is still recorded, and the version stays downloadable.
    expect(v.json.data.attributes.root.inputs.map((i: { name: string }) => i.name)).toContain('y');
    expect((await t.api('GET', `/v1/modules/acme/${slug}/aws/1.0.0/download`)).status).toBe(204);
  });

  // 1 ms: no parse can finish in it, so the bound is what is tested, not the machine's speed.
  it('stops an inspection that exceeds its time bound, keeping the version', async () => {
    const slow = await startTestServer({ TERRACE_INSPECT_TIMEOUT_MS: '1' });
    try {
      await createOrganization(slow, 'acme');
      await publish(slow, 'acme', 'vpc', 'aws', '1.0.0', VPC_MODULE);
      const v = await slow.api('GET', '/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws/version?module_version=1.0.0');
      expect(v.json.data.attributes.status).toBe('ok');
      expect(v.json.data.attributes.warnings).toEqual(['inspection took longer than 1 ms and was stopped']);
      expect((await slow.api('GET', '/v1/modules/acme/vpc/aws/1.0.0/download')).status).toBe(204);
    } finally {
      await slow.close();
    }
  });
});
