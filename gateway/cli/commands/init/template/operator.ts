/** my-operator: greets every new Example; the greeting lands in the object's status.create_fn. */
import { operator } from 'causeway/functions';

/** An Example's spec, as crd.yaml's schema has it. */
interface ExampleSpec {
  greeting: string;
}

/** What create_fn returns, stored under status.create_fn. */
interface Greeting {
  message: string;
}

/** An Example's status: each handler's result, under the handler's id. */
interface ExampleStatus {
  create_fn?: Greeting;
}

// Its scope: what it needs the gateway to reach for it (here, Examples only). The deployed gateway
// pins what it grants in deploy/ and refuses a service that asks for more.
const op = operator({ name: 'my-operator', scope: { resources: ['examples.my-operator.example.com'] } });

// The function's name is the handler's id: its result is stored in status.create_fn.
op.on.create<ExampleSpec, ExampleStatus>(
  'examples.my-operator.example.com',
  async function create_fn({ spec, name, logger }): Promise<Greeting> {
    logger.info(`greeting ${name}`);
    return { message: `${spec.greeting}, ${name}!` };
  },
);

export default op;
