/**
 * The records have no such thing: the errors every layer above src/db may name (the gateway answers them 404)
 * without reaching for the store that raises them.
 */
export class TenantNotFoundError extends Error {
  override name = 'TenantNotFoundError';
  constructor(readonly externalRef: string) {
    super(`no tenant with external ref ${externalRef} in our records`);
  }
}

export class RegistrationNotFoundError extends Error {
  override name = 'RegistrationNotFoundError';
  constructor(readonly registrationId: string) {
    super(`no webhook registration ${registrationId} in our records`);
  }
}
