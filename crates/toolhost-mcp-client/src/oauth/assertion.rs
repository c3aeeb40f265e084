//! A client that proves itself with a signed JWT instead of a secret (`private_key_jwt`,
//! RFC 7523 §2.2): the assertion names the client as issuer and subject and the authorization
//! server as audience, lives five minutes and is used once (`jti`). The key is a PKCS#8 PEM
//! (P-256 for ES256, Ed25519 for EdDSA, RSA for RS256), read from toolhost's environment at
//! each request and never kept with the grant.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, Ed25519KeyPair, RsaKeyPair};
use serde_json::json;

/// The form field's value that says what `client_assertion` is.
pub(crate) const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// Signs the bytes it is given.
type Sign<'a> = &'a dyn Fn(&[u8]) -> Result<Vec<u8>, String>;

/// How long an assertion is valid, in seconds.
const LIFETIME_S: u64 = 300;

/// The DER bytes of a PKCS#8 PEM key.
fn der_of(pem: &str) -> Result<Vec<u8>, String> {
    const BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
    const END: &str = "-----END PRIVATE KEY-----";
    let Some(start) = pem.find(BEGIN) else {
        return Err(if pem.contains("-----BEGIN") {
            "the private key must be PKCS#8 (`-----BEGIN PRIVATE KEY-----`); convert it with `openssl pkcs8 -topk8 -nocrypt`".to_owned()
        } else {
            "the private key is not a PEM key (`-----BEGIN PRIVATE KEY-----`)".to_owned()
        });
    };
    let body = &pem[start + BEGIN.len()..];
    let end = body
        .find(END)
        .ok_or("the private key's PEM has no end line")?;
    let text: String = body[..end].chars().filter(|c| !c.is_whitespace()).collect();
    STANDARD
        .decode(text)
        .map_err(|_| "the private key's PEM is not base64".to_owned())
}

/// A signed assertion of `client_id` for the authorization server `audience`.
pub(crate) fn client_assertion(
    pem: &str,
    client_id: &str,
    audience: &str,
) -> Result<String, String> {
    let der = der_of(pem)?;
    let rng = SystemRandom::new();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut jti = [0u8; 16];
    getrandom::fill(&mut jti).map_err(|e| format!("no random bytes: {e}"))?;
    let claims = json!({"iss": client_id, "sub": client_id, "aud": audience, "iat": now,
        "exp": now + LIFETIME_S, "jti": URL_SAFE_NO_PAD.encode(jti)});
    let signed = |alg: &str, sign: Sign<'_>| {
        let header = json!({"alg": alg, "typ": "JWT"});
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = sign(input.as_bytes())?;
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
    };
    let failed = |_| "the private key could not sign".to_owned();
    if let Ok(key) =
        EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
    {
        return signed("ES256", &|m| {
            Ok(key.sign(&rng, m).map_err(failed)?.as_ref().to_vec())
        });
    }
    if let Ok(key) = Ed25519KeyPair::from_pkcs8_maybe_unchecked(&der) {
        return signed("EdDSA", &|m| Ok(key.sign(m).as_ref().to_vec()));
    }
    if let Ok(key) = RsaKeyPair::from_pkcs8(&der) {
        return signed("RS256", &|m| {
            let mut out = vec![0u8; key.public().modulus_len()];
            key.sign(&signature::RSA_PKCS1_SHA256, &rng, m, &mut out)
                .map_err(failed)?;
            Ok(out)
        });
    }
    Err("the private key is not a P-256, Ed25519 or RSA key toolhost can sign with".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{KeyPair, UnparsedPublicKey};

    fn pem_of(der: &[u8]) -> String {
        format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(der)
        )
    }

    fn parts(jwt: &str) -> (serde_json::Value, serde_json::Value, Vec<u8>, String) {
        let p: Vec<&str> = jwt.split('.').collect();
        let decode = |s: &str| URL_SAFE_NO_PAD.decode(s).unwrap();
        (
            serde_json::from_slice(&decode(p[0])).unwrap(),
            serde_json::from_slice(&decode(p[1])).unwrap(),
            decode(p[2]),
            format!("{}.{}", p[0], p[1]),
        )
    }

    #[test]
    fn an_es256_assertion_names_the_client_and_the_server_and_verifies() {
        let rng = SystemRandom::new();
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
        let key = EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).unwrap();
        let jwt = client_assertion(&pem_of(pkcs8.as_ref()), "ci", "https://as.example").unwrap();
        let (header, claims, sig, input) = parts(&jwt);
        assert_eq!(header["alg"], "ES256");
        assert_eq!(
            (claims["iss"].as_str(), claims["sub"].as_str()),
            (Some("ci"), Some("ci"))
        );
        assert_eq!(claims["aud"], "https://as.example");
        assert_eq!(
            claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
            300
        );
        let public = UnparsedPublicKey::new(
            &signature::ECDSA_P256_SHA256_FIXED,
            key.public_key().as_ref(),
        );
        public.verify(input.as_bytes(), &sig).unwrap();
        let again = client_assertion(&pem_of(pkcs8.as_ref()), "ci", "https://as.example").unwrap();
        assert_ne!(
            parts(&again).1["jti"],
            claims["jti"],
            "each assertion is used once"
        );
    }

    #[test]
    fn an_ed25519_key_signs_eddsa() {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
        let key = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let jwt = client_assertion(&pem_of(pkcs8.as_ref()), "ci", "https://as.example").unwrap();
        let (header, _, sig, input) = parts(&jwt);
        assert_eq!(header["alg"], "EdDSA");
        UnparsedPublicKey::new(&signature::ED25519, key.public_key().as_ref())
            .verify(input.as_bytes(), &sig)
            .unwrap();
    }

    #[test]
    fn keys_toolhost_cannot_use_are_refused_saying_why() {
        let sec1 = "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----";
        assert!(client_assertion(sec1, "ci", "a")
            .unwrap_err()
            .contains("PKCS#8"));
        assert!(client_assertion("secret", "ci", "a")
            .unwrap_err()
            .contains("not a PEM"));
        let junk = pem_of(b"not a key");
        assert!(client_assertion(&junk, "ci", "a")
            .unwrap_err()
            .contains("not a P-256"));
    }
}
