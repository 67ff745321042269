/**
 * The names under which a gateway keeps its state on objects. Two Causeway deployments serving the
 * same objects give each other different identities so they never read or erase each other's state.
 */
export interface Identity {
  /** Key under `status` that holds the gateway's state where the status keeps it. */
  statusKey: string;
  /** Prefix of the annotations that hold the state where the status does not. */
  annotationPrefix: string;
  /** Recorded as the manager of the fields the gateway writes. */
  fieldManager: string;
  /** Holds objects with delete handlers until those have run. */
  finalizer: string;
}

export const DEFAULT_IDENTITY: Identity = {
  statusKey: 'causeway',
  annotationPrefix: 'causeway.dev',
  fieldManager: 'causeway',
  finalizer: 'causeway.dev/finalizer',
};
