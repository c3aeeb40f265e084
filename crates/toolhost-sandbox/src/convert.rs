//! JSON in, JSON out: [`to_js`] builds JavaScript values from JSON; [`from_js`] turns a result
//! back into JSON and refuses, naming the place, whatever JSON cannot express.

use rquickjs::{Array, Ctx, Object, Type, Value};
use serde_json::{Map, Number, Value as Json};

/// How deep JSON may nest, in both directions (as deep as `serde_json` parses by default).
pub const MAX_DEPTH: usize = 128;

/// The depth of a JSON value (a scalar is 0).
pub(crate) fn depth(value: &Json) -> usize {
    match value {
        Json::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Json::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// A JavaScript value equal to `value`. Callers check [`depth`] first; this only fails when the
/// engine cannot allocate.
pub(crate) fn to_js<'js>(ctx: &Ctx<'js>, value: &Json) -> rquickjs::Result<Value<'js>> {
    Ok(match value {
        Json::Null => Value::new_null(ctx.clone()),
        Json::Bool(b) => Value::new_bool(ctx.clone(), *b),
        Json::Number(n) => match n.as_i64().and_then(|i| i32::try_from(i).ok()) {
            Some(i) => Value::new_int(ctx.clone(), i),
            None => Value::new_float(ctx.clone(), n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => rquickjs::String::from_str(ctx.clone(), s)?.into_value(),
        Json::Array(items) => {
            let array = Array::new(ctx.clone())?;
            for (i, item) in items.iter().enumerate() {
                array.set(i, to_js(ctx, item)?)?;
            }
            array.into_value()
        }
        Json::Object(map) => {
            let object = Object::new(ctx.clone())?;
            for (key, item) in map {
                object.set(key.as_str(), to_js(ctx, item)?)?;
            }
            object.into_value()
        }
    })
}

/// Why a result could not become JSON.
#[derive(Debug)]
pub(crate) enum FromJsError {
    /// Something JSON cannot express, at a path like `result.items[3]`.
    NotJson(String),
    /// The JSON text would pass this many bytes.
    TooLarge(usize),
    /// JavaScript threw while the result was read (a getter, a proxy, a limit).
    Thrown,
}

impl From<rquickjs::Error> for FromJsError {
    fn from(_: rquickjs::Error) -> Self {
        FromJsError::Thrown
    }
}

/// Reads a returned value as JSON. Plain objects (prototype `Object.prototype` or `null`) and
/// arrays are read through their own enumerable string keys and indices; `undefined` at the top
/// is `null`. Everything else (`undefined` inside, functions, symbols, BigInts, non-finite
/// numbers, array holes, cycles, class instances such as `Date` or `Map`, proxies, nesting past
/// [`MAX_DEPTH`]) is refused with the path where it was found. The size of the JSON text is
/// counted as it is built and capped at `max_bytes`.
pub(crate) fn from_js<'js>(
    ctx: &Ctx<'js>,
    object_prototype: &Object<'js>,
    value: Value<'js>,
    max_bytes: usize,
) -> Result<Json, FromJsError> {
    if value.is_undefined() {
        return Ok(Json::Null);
    }
    let mut reader = Reader {
        ctx,
        object_prototype,
        max_bytes,
        bytes: 0,
        open: Vec::new(),
    };
    reader.read(value, &mut "result".to_owned())
}

struct Reader<'a, 'js> {
    ctx: &'a Ctx<'js>,
    object_prototype: &'a Object<'js>,
    max_bytes: usize,
    bytes: usize,
    /// The objects being read, outermost first, to find cycles.
    open: Vec<Value<'js>>,
}

impl<'js> Reader<'_, 'js> {
    fn count(&mut self, bytes: usize) -> Result<(), FromJsError> {
        self.bytes += bytes;
        if self.bytes > self.max_bytes {
            return Err(FromJsError::TooLarge(self.max_bytes));
        }
        Ok(())
    }

    fn read(&mut self, value: Value<'js>, path: &mut String) -> Result<Json, FromJsError> {
        let refuse =
            |what: &str, path: &str| Err(FromJsError::NotJson(format!("{path} is {what}")));
        match value.type_of() {
            Type::Null => {
                self.count(4)?;
                Ok(Json::Null)
            }
            Type::Bool => {
                self.count(5)?;
                Ok(Json::Bool(value.as_bool().unwrap_or_default()))
            }
            Type::Int => {
                self.count(11)?;
                Ok(Json::from(value.as_int().unwrap_or_default()))
            }
            Type::Float => {
                let f = value.as_float().unwrap_or(f64::NAN);
                self.count(24)?;
                if f.is_finite() && f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
                    // An integral double (also -0) is written as an integer, as JSON.stringify does.
                    return Ok(Json::from(f as i64));
                }
                match Number::from_f64(f) {
                    Some(n) => Ok(Json::Number(n)),
                    None => refuse(&format!("{f}, which JSON cannot express"), path),
                }
            }
            Type::String => {
                let s = value.as_string().map(|s| s.to_string()).transpose()?;
                let s = s.unwrap_or_default();
                self.count(s.len() + 2)?;
                Ok(Json::String(s))
            }
            Type::Undefined | Type::Uninitialized => refuse("undefined", path),
            Type::Symbol => refuse("a symbol", path),
            Type::BigInt => refuse("a BigInt (convert it to a string or a number)", path),
            Type::Function | Type::Constructor => refuse("a function", path),
            Type::Promise => refuse("a promise that was not awaited", path),
            Type::Proxy => refuse("a Proxy", path),
            Type::Array | Type::Object => self.read_container(value, path),
            other => refuse(&format!("a {} value", other.as_str()), path),
        }
    }

    fn read_container(
        &mut self,
        value: Value<'js>,
        path: &mut String,
    ) -> Result<Json, FromJsError> {
        if self.open.contains(&value) {
            return Err(FromJsError::NotJson(format!(
                "{path} refers back to an object that contains it (a cycle)"
            )));
        }
        if self.open.len() >= MAX_DEPTH {
            return Err(FromJsError::NotJson(format!(
                "{path} is nested deeper than {MAX_DEPTH} levels"
            )));
        }
        self.open.push(value.clone());
        let json = if let Some(array) = value.as_array() {
            self.read_array(array, path)
        } else {
            self.read_object(&value, path)
        };
        self.open.pop();
        json
    }

    fn read_array(&mut self, array: &Array<'js>, path: &mut String) -> Result<Json, FromJsError> {
        self.count(2)?;
        let mut items = Vec::new();
        for i in 0..array.len() {
            let item: Value<'js> = array.get(i)?;
            let len = path.len();
            path.push_str(&format!("[{i}]"));
            if item.is_undefined() {
                return Err(FromJsError::NotJson(format!(
                    "{path} is undefined (or a hole)"
                )));
            }
            items.push(self.read(item, path)?);
            path.truncate(len);
            self.count(1)?;
        }
        Ok(Json::Array(items))
    }

    fn read_object(&mut self, value: &Value<'js>, path: &mut String) -> Result<Json, FromJsError> {
        let Some(object) = value.as_object() else {
            return Err(FromJsError::NotJson(format!("{path} is not an object")));
        };
        match object.get_prototype() {
            None => {}
            Some(proto) if proto == *self.object_prototype => {}
            Some(_) => {
                let class = self.class_name(object);
                return Err(FromJsError::NotJson(format!(
                    "{path} is an instance of {class}, not a plain object (return plain data, \
                     e.g. date.toISOString() or Object.fromEntries(map))"
                )));
            }
        }
        self.count(2)?;
        let mut map = Map::new();
        let keys: Vec<String> = object.keys::<String>().collect::<rquickjs::Result<_>>()?;
        for key in keys {
            let item: Value<'js> = object.get(key.as_str())?;
            let len = path.len();
            path.push('.');
            path.push_str(&key);
            self.count(key.len() + 4)?;
            map.insert(key, self.read(item, path)?);
            path.truncate(len);
        }
        Ok(Json::Object(map))
    }

    /// The name of an object's constructor, for messages; `an object` when there is none.
    fn class_name(&self, object: &Object<'js>) -> String {
        let name = object
            .get::<_, Object<'js>>("constructor")
            .and_then(|c| c.get::<_, String>("name"))
            .ok()
            .filter(|name| !name.is_empty());
        if name.is_none() {
            let _ = self.ctx.catch();
        }
        name.unwrap_or_else(|| "an unnamed class".to_owned())
    }
}
