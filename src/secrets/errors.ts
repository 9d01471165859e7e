/**
 * Errors raised by the secrets module. Messages name key ids, entry positions and rules, never key
 * material, plaintexts or ciphertexts, so they are safe to log and to surface as Temporal failures.
 */

export const SecretsErrorCode = {
  invalidMasterKeys: 'SECRETS_INVALID_MASTER_KEYS',
  unknownKeyId: 'SECRETS_UNKNOWN_KEY_ID',
  malformedSealed: 'SECRETS_MALFORMED_SEALED',
  decryptFailed: 'SECRETS_DECRYPT_FAILED',
  invalidCodecRequest: 'SECRETS_INVALID_CODEC_REQUEST',
} as const;

export type SecretsErrorCode = (typeof SecretsErrorCode)[keyof typeof SecretsErrorCode];

export class SecretsError extends Error {
  readonly code: SecretsErrorCode;

  constructor(code: SecretsErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SecretsError';
    this.code = code;
  }
}

/** `SECRETS_KEYS` is unusable; `problems` lists every broken rule (entry positions are 1-based). */
export class MasterKeyConfigError extends SecretsError {
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(SecretsErrorCode.invalidMasterKeys, `SECRETS_KEYS is invalid: ${problems.join('; ')}`);
    this.name = 'MasterKeyConfigError';
    this.problems = problems;
  }
}

/** The ciphertext was sealed under a master key that is not configured (removed too early?). */
export class UnknownKeyIdError extends SecretsError {
  readonly keyId: string;

  constructor(keyId: string, knownKeyIds: readonly string[]) {
    super(
      SecretsErrorCode.unknownKeyId,
      `no master key with id "${keyId}" is configured (configured: ${knownKeyIds.join(', ')}); ` +
        'keep old keys in SECRETS_KEYS until everything sealed under them is resealed',
    );
    this.name = 'UnknownKeyIdError';
    this.keyId = keyId;
  }
}

/** The stored value is not a sealed secret this code can read. */
export class SealedFormatError extends SecretsError {
  constructor(message: string) {
    super(SecretsErrorCode.malformedSealed, message);
    this.name = 'SealedFormatError';
  }
}

/** Authentication failed: wrong key, wrong AAD (the value belongs to another owner) or tampered data. */
export class DecryptionError extends SecretsError {
  readonly keyId: string;

  constructor(keyId: string, what: string, cause?: unknown) {
    super(
      SecretsErrorCode.decryptFailed,
      `cannot decrypt ${what} sealed under master key "${keyId}": ` +
        'authentication failed (tampered, or bound to a different owner)',
      { cause },
    );
    this.name = 'DecryptionError';
    this.keyId = keyId;
  }
}

/** A codec-server request body does not have the `{ payloads: [...] }` shape. */
export class CodecRequestError extends SecretsError {
  constructor(message: string, cause?: unknown) {
    super(SecretsErrorCode.invalidCodecRequest, message, { cause });
    this.name = 'CodecRequestError';
  }
}
