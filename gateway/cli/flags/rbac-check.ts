import { flag, group } from '../command-line.ts';

export const RBAC_CHECK_AT_START = flag({
  name: 'rbac-check',
  value: '<what>',
  default: 'refuse',
  description:
    "At start, before it watches anything (or writes anything but its signing keys and its services' certificates, which reading their handlers needs), check that the cluster grants it the RBAC `causeway rbac` computes from the same flags and services: refuse (exit 1 naming each permission missing), warn (log them and start) or off. Once: the services FunctionService objects add later are not checked; nor is a gateway that logs in through a service (--login-from).",
});

/** Whether the gateway checks its own rights at start (run, gateway). */
export const RIGHTS_AT_START = group('Its RBAC, checked at start', RBAC_CHECK_AT_START);
