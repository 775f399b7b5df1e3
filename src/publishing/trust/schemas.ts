import { Type } from 'typebox';

export const ExchangeBody = Type.Object(
  {
    token: Type.String({ minLength: 1, maxLength: 16_384, description: "the CI job's OIDC ID token (GitHub Actions or GitLab CI)" }),
    product: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'the product, when the token matches the bindings of several' })),
  },
  { additionalProperties: false },
);

export const ExchangeAnswer = Type.Object({
  token: Type.String({ description: 'pier_tp_… credential: the edit token and SFTP password of the product until expiresAt' }),
  expiresAt: Type.String({ format: 'date-time' }),
  productId: Type.String(),
});
