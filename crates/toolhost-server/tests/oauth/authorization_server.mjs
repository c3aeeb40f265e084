// A real OAuth 2.1 authorization server for the tests: oidc-provider on loopback, issuing JWT
// access tokens (RS256) by the client credentials grant for the resource a client names
// (RFC 8707). Prints `{"issuer": ..., "token_endpoint": ...}` once it listens.
//
// Usage: node authorization_server.mjs OIDC_PROVIDER_ENTRY CLIENT_ID CLIENT_SECRET
import { createServer } from 'node:http';
import { generateKeyPairSync } from 'node:crypto';
import { pathToFileURL } from 'node:url';

const [entry, clientId, clientSecret] = process.argv.slice(2);
const { default: Provider } = await import(pathToFileURL(entry).href);

const server = createServer();
await new Promise((ready) => server.listen(0, '127.0.0.1', ready));
const issuer = `http://127.0.0.1:${server.address().port}`;

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signing = { ...privateKey.export({ format: 'jwk' }), kid: 'rsa-1', alg: 'RS256', use: 'sig' };

const provider = new Provider(issuer, {
  clients: [{
    client_id: clientId,
    client_secret: clientSecret,
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  scopes: ['run', 'read'],
  jwks: { keys: [signing] },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource) => ({
        scope: 'run read',
        audience: resource,
        accessTokenTTL: 300,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
});
server.on('request', provider.callback());
const metadata = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json();
console.log(JSON.stringify({ issuer, token_endpoint: metadata.token_endpoint }));
