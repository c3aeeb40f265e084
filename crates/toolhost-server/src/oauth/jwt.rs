//! JWT access tokens (RFC 9068, compact JWS): the header read before any key is looked up, then
//! the signature and the claims a resource server must check — issuer, audience, expiry, not
//! before — and the scopes and subject it grants.

use super::jwk::{Jwk, ALGORITHMS};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{Map, Value};

/// What the header of a token says about how it was signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    /// The algorithm, one of [`ALGORITHMS`].
    pub alg: String,
    /// The key's id, when given.
    pub kid: Option<String>,
}

/// What a token must say to be taken.
#[derive(Debug, Clone)]
pub(crate) struct Expected<'a> {
    /// `iss`, exactly.
    pub issuer: &'a str,
    /// One of `aud`, exactly.
    pub audience: &'a str,
    /// Seconds since the epoch, now.
    pub now: i64,
    /// How far apart the clocks of the authorization server and this one may be, in seconds.
    pub leeway: i64,
}

/// A valid token's grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grant {
    /// Who it was given to, kind and all: `sub:…` (its `sub`), else `client:…` (its
    /// `client_id`), so that the two can never be taken for each other.
    pub subject: String,
    /// The client it was given to (`client_id`, else `azp`), when it says.
    pub client: Option<String>,
    /// The scopes of `scope` (space-separated) or `scp` (a list or a string).
    pub scopes: Vec<String>,
    /// `exp`, in seconds since the epoch.
    pub expires_at: i64,
}

fn decode_json(part: &str, what: &str) -> Result<Map<String, Value>, String> {
    let bytes = URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| format!("its {what} is not base64url"))?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(format!("its {what} is not a JSON object")),
    }
}

/// Splits a compact JWS into its three parts.
fn parts(token: &str) -> Result<[&str; 3], String> {
    let pieces: Vec<&str> = token.split('.').collect();
    match pieces[..] {
        [h, p, s] => Ok([h, p, s]),
        [_, _, _, _, _] => Err("it is encrypted (JWE), which toolhost does not take".to_owned()),
        _ => Err("it is not a JWT (three parts separated by dots)".to_owned()),
    }
}

/// Reads the header: the algorithm must be one toolhost accepts, no `crit` extension may be
/// asked for, and `typ` must say an access token (`at+jwt`, RFC 9068 §4), so that another JWT
/// of the same issuer (an ID token) is never taken for one; with `plain_jwt`, a `typ` of `JWT`
/// or none is taken too, for servers that do not mark their access tokens.
pub(crate) fn header(token: &str, plain_jwt: bool) -> Result<Header, String> {
    let [head, _, _] = parts(token)?;
    let head = decode_json(head, "header")?;
    let alg = head.get("alg").and_then(Value::as_str).unwrap_or("");
    if !ALGORITHMS.contains(&alg) {
        return Err(format!(
            "it is signed with {alg:?}; toolhost takes {}",
            ALGORITHMS.join(", ")
        ));
    }
    if head.contains_key("crit") {
        return Err("its header asks for extensions (\"crit\") toolhost does not know".to_owned());
    }
    let typ = head
        .get("typ")
        .map(|t| t.as_str().unwrap_or("").to_ascii_lowercase());
    let access_token = matches!(typ.as_deref(), Some("at+jwt" | "application/at+jwt"));
    let plain = matches!(typ.as_deref(), None | Some("jwt"));
    let taken = access_token || (plain && plain_jwt);
    if !taken {
        return Err(match typ {
            Some(typ) if plain => format!("its type {typ:?} does not mark an access token (`at+jwt`); set `accept_plain_jwt` if the authorization server marks none"),
            None => "its header has no type; an access token's is `at+jwt` (set `accept_plain_jwt` if the authorization server marks none)".to_owned(),
            Some(typ) => format!("its type {typ:?} is not an access token's"),
        });
    }
    Ok(Header {
        alg: alg.to_owned(),
        kid: head.get("kid").and_then(Value::as_str).map(str::to_owned),
    })
}

/// The keys of `keys` that may have signed a token with `header`: the one its `kid` names, or
/// without a `kid` every key that fits the algorithm. `Err` says why the named key cannot be
/// used; an empty list, that no key of the set fits (the set may be out of date).
pub(crate) fn candidates<'k>(header: &Header, keys: &'k [Jwk]) -> Result<Vec<&'k Jwk>, String> {
    match &header.kid {
        Some(kid) => {
            let named: Vec<&Jwk> = keys
                .iter()
                .filter(|k| k.kid.as_ref() == Some(kid))
                .collect();
            if named.is_empty() {
                return Ok(named);
            }
            let fit: Vec<&Jwk> = named
                .iter()
                .copied()
                .filter(|k| k.fits(&header.alg))
                .collect();
            match fit.is_empty() {
                true => Err(format!(
                    "its key {kid:?} cannot be used: {}",
                    named[0].unfit_for(&header.alg).unwrap_or_default()
                )),
                false => Ok(fit),
            }
        }
        None => Ok(keys.iter().filter(|k| k.fits(&header.alg)).collect()),
    }
}

/// Checks the signature of `token` against `keys` (chosen by [`candidates`]) and then its claims.
pub(crate) fn verify(
    token: &str,
    header: &Header,
    keys: &[&Jwk],
    expected: &Expected<'_>,
) -> Result<Grant, String> {
    let [head, payload, signature] = parts(token)?;
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| "its signature is not base64url".to_owned())?;
    let message = &token.as_bytes()[..head.len() + 1 + payload.len()];
    if !keys
        .iter()
        .any(|key| key.verifies(&header.alg, message, &signature))
    {
        return Err("its signature does not match the authorization server's keys".to_owned());
    }
    claims(&decode_json(payload, "payload")?, expected)
}

fn claims(claims: &Map<String, Value>, expected: &Expected<'_>) -> Result<Grant, String> {
    let text = |name: &str| claims.get(name).and_then(Value::as_str);
    let time = |name: &str| -> Result<Option<i64>, String> {
        match claims.get(name) {
            None => Ok(None),
            Some(v) => v
                .as_i64()
                .or_else(|| v.as_f64().map(|f| f as i64))
                .map(Some)
                .ok_or_else(|| format!("its \"{name}\" is not a number of seconds")),
        }
    };
    if text("iss") != Some(expected.issuer) {
        return Err(format!(
            "it was issued by {:?}, not by the configured authorization server {:?}",
            text("iss").unwrap_or(""),
            expected.issuer
        ));
    }
    let audience_matches = match claims.get("aud") {
        Some(Value::String(aud)) => aud == expected.audience,
        Some(Value::Array(auds)) => auds.iter().any(|a| a.as_str() == Some(expected.audience)),
        _ => false,
    };
    if !audience_matches {
        return Err(format!(
            "it is not meant for this server: its audience does not include {:?}",
            expected.audience
        ));
    }
    let expires_at = time("exp")?.ok_or("it has no expiry (\"exp\")")?;
    // Saturating: a token's numbers are the sender's, and none may overflow the arithmetic.
    if expires_at.saturating_add(expected.leeway) <= expected.now {
        let ago = expected.now.saturating_sub(expires_at);
        return Err(format!("it expired {ago} s ago"));
    }
    if let Some(not_before) = time("nbf")? {
        if not_before.saturating_sub(expected.leeway) > expected.now {
            let wait = not_before.saturating_sub(expected.now);
            return Err(format!("it is not valid for another {wait} s"));
        }
    }
    let client = text("client_id")
        .or_else(|| text("azp"))
        .filter(|c| !c.is_empty());
    let subject = match text("sub").filter(|s| !s.is_empty()) {
        Some(sub) => format!("sub:{sub}"),
        None => format!(
            "client:{}",
            client.ok_or("it names no subject (\"sub\" or \"client_id\")")?
        ),
    };
    let scopes = match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(s)), _) | (None, Some(Value::String(s))) => {
            s.split_whitespace().map(str::to_owned).collect()
        }
        (None, Some(Value::Array(list))) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    Ok(Grant {
        subject,
        client: client.map(str::to_owned),
        scopes,
        expires_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn encode(value: &Value) -> String {
        URL_SAFE_NO_PAD.encode(value.to_string())
    }

    const EXPECTED: Expected<'static> = Expected {
        issuer: "https://as.example",
        audience: "https://tools.example/mcp",
        now: 1_000_000,
        leeway: 60,
    };

    fn claims_of(value: Value) -> Result<Grant, String> {
        claims(value.as_object().unwrap(), &EXPECTED)
    }

    fn good() -> Value {
        json!({"iss": "https://as.example", "aud": ["other", "https://tools.example/mcp"],
               "exp": 1_000_100, "sub": "ada", "scope": "run read"})
    }

    #[test]
    fn the_claims_a_resource_server_must_check_are_checked() {
        let grant = claims_of(good()).unwrap();
        assert_eq!(grant.subject, "sub:ada");
        assert_eq!(grant.scopes, ["run", "read"]);
        let with = |key: &str, value: Value| {
            let mut c = good();
            c[key] = value;
            claims_of(c).unwrap_err()
        };
        assert!(with("iss", json!("https://evil.example")).contains("not by the configured"));
        assert!(with("aud", json!("https://tools.example/other")).contains("not meant for this"));
        assert!(with("exp", json!(999_000)).contains("expired 1000 s ago"));
        assert!(with("nbf", json!(1_000_500)).contains("not valid for another 500 s"));
        assert!(with("exp", json!("soon")).contains("\"exp\" is not a number"));
        let mut c = good();
        c.as_object_mut().unwrap().remove("exp");
        assert!(claims_of(c).unwrap_err().contains("no expiry"));
        let mut c = good();
        c.as_object_mut().unwrap().remove("sub");
        assert!(claims_of(c).unwrap_err().contains("no subject"));
    }

    #[test]
    fn extreme_times_neither_overflow_nor_pass() {
        let mut c = good();
        c["exp"] = json!(i64::MIN);
        assert!(claims_of(c).unwrap_err().contains("expired"));
        let mut c = good();
        c["exp"] = json!(i64::MAX);
        c["nbf"] = json!(i64::MAX);
        assert!(claims_of(c).unwrap_err().contains("not valid for another"));
        let mut c = good();
        c["exp"] = json!(1e300);
        c["nbf"] = json!(-1e300);
        assert!(claims_of(c).is_ok());
    }

    #[test]
    fn the_clocks_may_differ_by_the_leeway() {
        let mut c = good();
        c["exp"] = json!(999_950);
        c["nbf"] = json!(1_000_030);
        assert!(claims_of(c).is_ok());
    }

    #[test]
    fn scopes_come_from_scope_or_scp() {
        let mut c = good();
        c.as_object_mut().unwrap().remove("scope");
        c["scp"] = json!(["run", "approve"]);
        assert_eq!(claims_of(c).unwrap().scopes, ["run", "approve"]);
    }

    #[test]
    fn headers_toolhost_must_not_trust_are_refused() {
        let token = |h: Value| format!("{}.{}.sig", encode(&h), encode(&json!({})));
        let strict = |h: Value| header(&token(h), false);
        assert!(strict(json!({"alg": "none", "typ": "at+jwt"}))
            .unwrap_err()
            .contains("\"none\""));
        assert!(strict(json!({"alg": "HS256", "typ": "at+jwt"})).is_err());
        assert!(strict(json!({"alg": "RS256", "typ": "at+jwt", "crit": ["b64"]})).is_err());
        assert!(strict(json!({"alg": "RS256", "typ": "dpop+jwt"})).is_err());
        assert!(header("a.b.c.d.e", true).unwrap_err().contains("encrypted"));
        assert!(header("thk_x", true).unwrap_err().contains("not a JWT"));
        let ok = strict(json!({"alg": "ES256", "kid": "k1", "typ": "at+jwt"})).unwrap();
        assert_eq!(ok.kid.as_deref(), Some("k1"));
    }

    #[test]
    fn an_unmarked_jwt_is_an_access_token_only_where_the_server_marks_none() {
        let token = |h: Value| format!("{}.{}.sig", encode(&h), encode(&json!({})));
        for unmarked in [
            json!({"alg": "RS256"}),
            json!({"alg": "RS256", "typ": "JWT"}),
        ] {
            let e = header(&token(unmarked.clone()), false).unwrap_err();
            assert!(e.contains("accept_plain_jwt"), "{e}");
            assert!(header(&token(unmarked), true).is_ok());
        }
        assert!(header(
            &token(json!({"alg": "RS256", "typ": "application/at+jwt"})),
            false
        )
        .is_ok());
    }
}
