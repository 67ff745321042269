import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { BILLING, files, noFiles, nowhere, reads, refuses } from '../../../../test/support/cli-options.ts';
import { parseCommandLine } from '../../command-line.ts';
import { COMMANDS } from '../../main.ts';
import type { Whereabouts } from '../../process.ts';
import { rbacCheckOptions, rbacCommandOptions, rbacOptions } from './options.ts';

describe('rbacOptions: what causeway rbac reads, and the gateway flags its rules follow', () => {
  it("reads the handlers' sources with their pinned scopes, the account, namespaces, peering, keys, certificates and admission", () => {
    assert.deepEqual(
      rbacOptions(
        {
          functions: [BILLING],
          'function-scope': ['billing=/scopes/billing.yaml'],
          'function-tls': ['billing=payments/billing-tls'],
          'function-certificates': 'ops/function-ca',
          namespace: ['payments'],
          'signing-keys': 'ops/signing-keys',
          'webhook-certificates': 'ops/webhooks-tls',
          'annotation-prefix': 'billing.example.com',
        },
        reads.text,
        { contextNamespace: 'ops' },
      ),
      {
        sources: {
          functions: [
            {
              name: 'billing',
              url: 'http://billing-functions:8080',
              scope: { resources: ['invoices.billing.example.com'] },
            },
          ],
        },
        signingKeys: { namespace: 'ops', name: 'signing-keys' },
        request: {
          account: { namespace: 'ops', name: 'causeway-gateway' },
          namespaces: ['payments'],
          stateIn: 'auto',
          peeringNamespace: 'ops',
          signingKeys: { namespace: 'ops', name: 'signing-keys' },
          functionCertificates: { namespace: 'ops', name: 'function-ca' },
          functionTls: [{ namespace: 'payments', name: 'billing-tls' }],
        },
        admission: {
          configurationName: 'billing.example.com',
          certificates: { namespace: 'ops', name: 'webhooks-tls' },
        },
      },
    );
  });

  it('takes --module and --function-services, --standalone (no Leases) and the account given', () => {
    const flags = rbacOptions(
      {
        module: './operator.ts',
        'function-services': 'functions',
        standalone: true,
        'service-account': 'operators/billing-gateway',
        'state-in': 'annotations',
      },
      noFiles,
      {},
    );
    assert.deepEqual(flags.sources, { functions: [], functionServices: 'functions' });
    assert.equal(flags.module, './operator.ts');
    assert.deepEqual(flags.request, {
      account: { namespace: 'operators', name: 'billing-gateway' },
      stateIn: 'annotations',
      functionTls: [],
      functionServices: 'functions',
    });
  });

  it('refuses flags that say no valid gateway', () => {
    assert.throws(() => rbacOptions({}, noFiles, {}), /needs the handlers/);
    assert.throws(
      () => rbacOptions({ module: 'm.ts', namespace: ['a'], 'all-namespaces': true }, noFiles, {}),
      /--namespace and --all-namespaces exclude each other/,
    );
    assert.throws(
      () => rbacOptions({ module: 'm.ts', standalone: true, 'peering-namespace': 'ops' }, noFiles, {}),
      /--standalone and --peering-namespace exclude each other/,
    );
    assert.throws(
      () => rbacOptions({ functions: [BILLING], 'function-tls': ['billing=ops/tls'] }, noFiles, {}),
      /--function-tls needs --function-certificates/,
    );
  });
});

describe("rbacCommandOptions: causeway rbac's module and the gateway's arguments as they are", () => {
  /** The values of `causeway rbac` with `args`, as its command line gives them. */
  const rbacValues = (args: string[]) => {
    const line = parseCommandLine(['rbac', ...args], COMMANDS);
    assert.ok(line.command);
    return line;
  };
  const optionsOf = (args: string[], whereabouts: Whereabouts, readText = noFiles) => {
    const { args: given, values } = rbacValues(args);
    return rbacCommandOptions(given.module, values, readText, whereabouts);
  };

  it('reads the module given as its argument, as --module does, and refuses it given both ways', () => {
    assert.equal(optionsOf(['./operator.ts', '-n', 'a'], nowhere).module, './operator.ts');
    assert.equal(optionsOf(['--module', './operator.ts'], nowhere).module, './operator.ts');
    refuses(
      () => optionsOf(['./operator.ts', '--module', './other.ts'], nowhere),
      'the module is given twice: as <module> and with --module; give it once',
    );
    refuses(
      () => optionsOf(['-n', 'a'], nowhere),
      `needs the handlers, from where the gateway gets them: <module>, --functions <name>=<url> or --function-services <ns>`,
    );
  });

  it('refuses a gateway that logs in through a service: it has no ServiceAccount whose RBAC to print', () => {
    refuses(
      () => optionsOf(['./operator.ts', '--login-from', 'billing'], nowhere),
      `--login-from billing: that gateway calls the API with the credentials "billing"'s login handler gives, not as a ServiceAccount, so what they grant is that handler's business: there is no RBAC of a ServiceAccount to print or check`,
    );
  });

  it('takes the secret shared with one service alone, to read its manifest', () => {
    const flags = optionsOf(
      [...['--functions', BILLING], ...['--function-secret', 'billing=/secrets/billing']],
      nowhere,
    );
    assert.deepEqual(flags.functionSecrets, new Map([['billing', '/secrets/billing']]));
    refuses(
      () => optionsOf(['--functions', BILLING, '--function-secret', 'shipping=/secrets/shipping'], nowhere),
      '--function-secret names "shipping", which no --functions gives',
    );
  });

  // The Deployments' args, as kubectl would run them in `operators` (serving the example's namespace,
  // kopfexample), and the scopes they mount.
  const deployFile = (path: string) =>
    readFileSync(new URL(`../../../../deploy/${path}`, import.meta.url), 'utf8');
  const deployed = (path: string) => {
    const args: string[] = parseYaml(deployFile(path)).spec.template.spec.containers[0].args;
    assert.equal(args[0], 'gateway');
    return args.slice(1).map((arg) => arg.replaceAll('$(POD_NAMESPACE)', 'operators'));
  };
  const mounted = files({
    '/etc/causeway/scopes/kopfexample.yaml': deployFile('base/gateway/scopes/kopfexample.yaml'),
    '/etc/causeway/scopes/admission.yaml': deployFile('examples/17-admission/scopes/admission.yaml'),
  });
  /** Where `causeway rbac` runs: a kubeconfig whose context is in the gateway's namespace. */
  const inOperators = { contextNamespace: 'operators' };
  const handPicked = {
    minimal: [
      ...['--functions', 'kopfexample=https://kopfexample-functions.operators.svc:8080'],
      ...['--function-scope', 'kopfexample=/etc/causeway/scopes/kopfexample.yaml'],
      ...['--function-tls', 'kopfexample=operators/kopfexample-functions-tls'],
      ...['--function-certificates', 'operators/causeway-function-ca', '--namespace', 'kopfexample'],
      ...['--signing-keys', 'operators/causeway-signing-keys'],
      '--impersonate',
    ],
    admission: [
      ...['--functions', 'admission=https://kopfexample-functions.operators.svc:8080'],
      ...['--function-scope', 'admission=/etc/causeway/scopes/admission.yaml'],
      ...['--function-tls', 'admission=operators/kopfexample-functions-tls'],
      ...['--function-certificates', 'operators/causeway-function-ca', '--namespace', 'kopfexample'],
      ...['--signing-keys', 'operators/causeway-signing-keys'],
      ...['--webhook-certificates', 'operators/causeway-gateway-webhooks-tls'],
      '--impersonate',
    ],
  };
  const examples = [
    { name: 'deploy/examples/01-minimal', file: 'base/gateway/deployment.yaml', flags: handPicked.minimal },
    {
      name: 'deploy/examples/17-admission',
      file: 'examples/17-admission/gateway.yaml',
      flags: handPicked.admission,
    },
  ];
  for (const { name, file, flags } of examples) {
    it(`takes the args of ${name}'s gateway as they are, and reads what the flags that matter say alone`, () => {
      const args = deployed(file);
      assert.deepEqual(optionsOf(args, inOperators, mounted), optionsOf(flags, inOperators, mounted));
    });
  }
});

describe('rbacCheckOptions: how gateway and run check their rights at start', () => {
  const gatewayFlags = {
    functions: [BILLING],
    'function-scope': ['billing=/scopes/billing.yaml'],
    namespace: ['payments'],
    'signing-keys': 'ops/signing-keys',
  };

  it('refuses by default, against the request and admission causeway rbac makes of the same flags', () => {
    const { request, admission } = rbacOptions(gatewayFlags, reads.text, { contextNamespace: 'ops' });
    assert.deepEqual(rbacCheckOptions(gatewayFlags, reads.text, { contextNamespace: 'ops' }), {
      mode: 'refuse',
      flags: { request, admission },
    });
  });

  it('checks, with --impersonate, as a gateway that impersonates its services, accounts in its own namespace', () => {
    const values = { ...gatewayFlags, impersonate: true };
    assert.equal(
      rbacOptions(values, reads.text, { podNamespace: 'ops', contextNamespace: 'x' }).impersonate,
      'ops',
    );
    assert.equal(rbacCheckOptions(values, reads.text, { contextNamespace: 'ops' })?.flags.impersonate, 'ops');
    assert.equal(rbacOptions(gatewayFlags, reads.text, { contextNamespace: 'ops' }).impersonate, undefined);
  });

  it('checks the Leases of --dev-sessions too', () => {
    const check = rbacCheckOptions({ ...gatewayFlags, 'dev-sessions': 'dev' }, reads.text, nowhere);
    assert.equal(check?.flags.request.devSessions, 'dev');
  });

  it('takes warn, and nothing to check with off', () => {
    assert.equal(
      rbacCheckOptions({ ...gatewayFlags, 'rbac-check': 'warn' }, reads.text, nowhere)?.mode,
      'warn',
    );
    assert.equal(rbacCheckOptions({ ...gatewayFlags, 'rbac-check': 'off' }, reads.text, nowhere), undefined);
  });

  it('refuses another value, naming the choices', () => {
    refuses(
      () => rbacCheckOptions({ ...gatewayFlags, 'rbac-check': 'yes' }, reads.text, nowhere),
      '--rbac-check expects refuse, warn or off, got "yes"',
    );
  });
});
