/**
 * Kopf's admission example: validating handlers that refuse objects (with a message, and a code of
 * their own), one that only warns, and a mutating handler that injects a field into labelled objects.
 */
import { AdmissionError, operator } from 'causeway/functions';

const op = operator({ name: 'admission', scope: { resources: [], admission: ['kopfexamples.kopf.dev'] } });

op.on.validate('kopfexamples', function authhook({ userInfo, warnings }) {
  warnings.push(`Accessing as user: ${userInfo?.username ?? '(unidentified)'}`);
});

op.on.validate('kopfexamples', function validate1({ spec, dryRun }) {
  if (!dryRun && spec.field === 'wrong') throw new AdmissionError("Meh! I don't like it. Change the field.");
});

op.on.validate('kopfexamples', { field: 'spec.field', value: 'not-allowed' }, function validate2() {
  throw new AdmissionError("I'm too lazy anyway. Go away!", 555);
});

op.on.mutate('kopfexamples', { labels: { somelabel: 'somevalue' } }, function mutate1({ patch }) {
  patch.spec = { injected: 123 };
});

export default op;
