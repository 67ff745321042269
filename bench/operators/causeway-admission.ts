/** The admission benchmark's Causeway side (bench/admission.ts): one validating handler that allows everything. */
import { operator } from 'causeway/functions';

const op = operator({ name: 'bench' });

op.on.validate('kopfexamples', function allow() {});

export default op;
