//! Public keys of an authorization server as a JSON Web Key Set (RFC 7517) and the checking of
//! a JWS signature with one of them (RFC 7518 algorithms, verified by `ring`).
//!
//! Keys for encryption (`"use": "enc"`) and keys of a type toolhost cannot verify with (`oct`,
//! other curves) stay in the set as unusable, with why, so a token that names one is refused
//! with that reason rather than as "unknown key".

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde_json::Value;

/// The signature algorithms toolhost accepts. `none` and the HMAC family are absent on
/// purpose: a resource server must never take a token it could have signed itself.
pub(crate) const ALGORITHMS: [&str; 9] = [
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

/// One key of a set.
#[derive(Debug, Clone)]
pub(crate) struct Jwk {
    /// `kid`, when the set names its keys.
    pub kid: Option<String>,
    /// `alg`, when the key is limited to one algorithm.
    pub alg: Option<String>,
    material: Material,
}

#[derive(Debug, Clone)]
enum Material {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// An uncompressed point (`04 || x || y`) on P-256 or P-384.
    Ec {
        curve: Curve,
        point: Vec<u8>,
    },
    Ed25519(Vec<u8>),
    /// A key that cannot check signatures here, and why.
    Unusable(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Curve {
    P256,
    P384,
}

/// Reads a JWK Set document (`{"keys": [...]}`). A member that is not a key object is an error
/// naming its place; a key toolhost cannot use is kept as unusable.
pub(crate) fn parse_set(document: &Value) -> Result<Vec<Jwk>, String> {
    let keys = document
        .get("keys")
        .and_then(Value::as_array)
        .ok_or("the key set has no \"keys\" array")?;
    keys.iter()
        .enumerate()
        .map(|(i, key)| parse_key(key).map_err(|why| format!("key {i} of the key set: {why}")))
        .collect()
}

fn parse_key(key: &Value) -> Result<Jwk, String> {
    let text = |name: &str| key.get(name).and_then(Value::as_str);
    if !key.is_object() {
        return Err("not an object".to_owned());
    }
    let bytes = |name: &str| -> Result<Vec<u8>, String> {
        let value = text(name).ok_or_else(|| format!("\"{name}\" is missing"))?;
        URL_SAFE_NO_PAD
            .decode(value.trim_end_matches('='))
            .map_err(|_| format!("\"{name}\" is not base64url"))
    };
    let material = if text("use").is_some_and(|u| u != "sig") {
        Material::Unusable(format!(
            "it is for \"{}\", not signatures",
            text("use").unwrap_or("")
        ))
    } else {
        match text("kty") {
            Some("RSA") => {
                // Leading zero bytes are allowed by some servers; ring wants the minimal form.
                let strip = |mut b: Vec<u8>| {
                    let zeros = b.iter().take_while(|&&x| x == 0).count();
                    b.drain(..zeros);
                    b
                };
                Material::Rsa {
                    n: strip(bytes("n")?),
                    e: strip(bytes("e")?),
                }
            }
            Some("EC") => {
                let (curve, size) = match text("crv") {
                    Some("P-256") => (Some(Curve::P256), 32),
                    Some("P-384") => (Some(Curve::P384), 48),
                    _ => (None, 0),
                };
                match curve {
                    Some(curve) => {
                        let (x, y) = (bytes("x")?, bytes("y")?);
                        if x.len() != size || y.len() != size {
                            return Err(format!("\"x\" and \"y\" must be {size} bytes each"));
                        }
                        let mut point = vec![4u8];
                        point.extend_from_slice(&x);
                        point.extend_from_slice(&y);
                        Material::Ec { curve, point }
                    }
                    None => Material::Unusable(format!(
                        "its curve {:?} is not P-256 or P-384",
                        text("crv").unwrap_or("")
                    )),
                }
            }
            Some("OKP") if text("crv") == Some("Ed25519") => {
                let x = bytes("x")?;
                if x.len() != 32 {
                    return Err("\"x\" of an Ed25519 key must be 32 bytes".to_owned());
                }
                Material::Ed25519(x)
            }
            Some(kty) => Material::Unusable(format!(
                "its type \"{kty}\" ({}) cannot verify signatures here",
                text("crv").unwrap_or("no curve")
            )),
            None => return Err("\"kty\" is missing".to_owned()),
        }
    };
    Ok(Jwk {
        kid: text("kid").map(str::to_owned),
        alg: text("alg").map(str::to_owned),
        material,
    })
}

impl Jwk {
    /// Whether this key could have made a signature with `alg` (its type fits the algorithm and
    /// its own `alg`, if any, is the same).
    pub(crate) fn fits(&self, alg: &str) -> bool {
        if self.alg.as_deref().is_some_and(|own| own != alg) {
            return false;
        }
        match &self.material {
            Material::Rsa { .. } => alg.starts_with("RS") || alg.starts_with("PS"),
            Material::Ec { curve, .. } => {
                (*curve == Curve::P256 && alg == "ES256")
                    || (*curve == Curve::P384 && alg == "ES384")
            }
            Material::Ed25519(_) => alg == "EdDSA",
            Material::Unusable(_) => false,
        }
    }

    /// Why this key cannot verify `alg`, when it cannot.
    pub(crate) fn unfit_for(&self, alg: &str) -> Option<String> {
        match &self.material {
            Material::Unusable(why) => Some(why.clone()),
            _ if !self.fits(alg) => Some(format!("it is not a key for {alg}")),
            _ => None,
        }
    }

    /// Whether `signature` over `message` was made with this key and `alg`.
    pub(crate) fn verifies(&self, alg: &str, message: &[u8], signature_bytes: &[u8]) -> bool {
        if !self.fits(alg) {
            return false;
        }
        let checked = match &self.material {
            Material::Rsa { n, e } => {
                let params: &signature::RsaParameters = match alg {
                    "RS256" => &signature::RSA_PKCS1_2048_8192_SHA256,
                    "RS384" => &signature::RSA_PKCS1_2048_8192_SHA384,
                    "RS512" => &signature::RSA_PKCS1_2048_8192_SHA512,
                    "PS256" => &signature::RSA_PSS_2048_8192_SHA256,
                    "PS384" => &signature::RSA_PSS_2048_8192_SHA384,
                    "PS512" => &signature::RSA_PSS_2048_8192_SHA512,
                    _ => return false,
                };
                RsaPublicKeyComponents { n, e }.verify(params, message, signature_bytes)
            }
            Material::Ec { curve, point } => {
                let params = match curve {
                    Curve::P256 => &signature::ECDSA_P256_SHA256_FIXED,
                    Curve::P384 => &signature::ECDSA_P384_SHA384_FIXED,
                };
                UnparsedPublicKey::new(params, point).verify(message, signature_bytes)
            }
            Material::Ed25519(x) => {
                UnparsedPublicKey::new(&signature::ED25519, x).verify(message, signature_bytes)
            }
            Material::Unusable(_) => return false,
        };
        checked.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_it_cannot_use_are_kept_with_why() {
        let set = parse_set(&json!({"keys": [
            {"kty": "oct", "k": "c2VjcmV0", "kid": "h"},
            {"kty": "RSA", "use": "enc", "n": "AQAB", "e": "AQAB", "kid": "e"},
            {"kty": "EC", "crv": "secp256k1", "x": "AA", "y": "AA", "kid": "k"}
        ]}))
        .unwrap();
        assert!(set[0].unfit_for("RS256").unwrap().contains("\"oct\""));
        assert!(set[1].unfit_for("RS256").unwrap().contains("\"enc\""));
        assert!(set[2].unfit_for("ES256").unwrap().contains("secp256k1"));
    }

    #[test]
    fn a_malformed_key_is_an_error_naming_its_place() {
        let e = parse_set(&json!({"keys": [{"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"}]}))
            .unwrap_err();
        assert!(e.starts_with("key 0 of the key set"), "{e}");
        let e =
            parse_set(&json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "!!"}]})).unwrap_err();
        assert!(e.contains("\"x\" is not base64url"), "{e}");
        assert!(parse_set(&json!({"key": []})).is_err());
    }

    #[test]
    fn a_key_limited_to_one_algorithm_fits_no_other() {
        let set =
            parse_set(&json!({"keys": [{"kty": "RSA", "alg": "PS256", "n": "AQAB", "e": "AQAB"}]}))
                .unwrap();
        assert!(set[0].fits("PS256"));
        assert!(!set[0].fits("RS256"));
    }
}
