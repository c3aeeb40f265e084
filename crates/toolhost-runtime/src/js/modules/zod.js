// toolhost's `zod`: exactly the subset of Zod that tool arguments and tenvs may use (spec 000
// §3.2, spec 002 "Supported Zod Types"), producing the JSON Schema a blueprint would hold.
// Anything outside the subset throws at once, naming what was used.

const ALLOWED =
  'z.string, z.number, z.boolean, z.null, z.literal, z.enum, z.optional, z.nullable, ' +
  'z.default, z.array, z.object, z.record, z.union, .describe, and the checks .min, .max, ' +
  '.length, .regex, .int, .positive, .nonnegative, .negative, .nonpositive, .gt, .gte, .lt, ' +
  '.lte, .nonempty';

class ZodSubsetError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ZodSubsetError';
  }
}

const refuse = (what) => {
  throw new ZodSubsetError(`${what} is outside the Zod subset tools may use (${ALLOWED})`);
};

// A schema object refuses every property it does not have, so `.transform(...)` or
// `.email()` fail where they are written, not later.
const guarded = (schema) =>
  new Proxy(schema, {
    get(target, prop, receiver) {
      if (typeof prop === 'symbol' || prop in target) return Reflect.get(target, prop, receiver);
      if (prop === 'then' || prop === 'toJSON') return undefined;
      return refuse(`.${prop}()`);
    },
  });

const isSchema = (value) => value !== null && typeof value === 'object' && value.__zod === true;

const expectSchema = (value, where) => {
  if (!isSchema(value)) refuse(`${where} given something that is not a schema of this subset`);
  return value;
};

const finiteNumber = (value, where) => {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new ZodSubsetError(`${where} takes a finite number, not ${String(value)}`);
  }
  return value;
};

const count = (value, where) => {
  if (!Number.isInteger(value) || value < 0) {
    throw new ZodSubsetError(`${where} takes a whole number of at least 0, not ${String(value)}`);
  }
  return value;
};

class Schema {
  constructor(kind, json, extra) {
    this.__zod = true;
    this.kind = kind;
    this.json = json; // the JSON Schema of this node, without wrappers
    this.isOptional = false;
    this.hasDefault = false;
    this.defaultValue = undefined;
    this.description = undefined;
    Object.assign(this, extra);
  }

  with(changes) {
    const copy = Object.assign(Object.create(Object.getPrototypeOf(this)), this, changes);
    return guarded(copy);
  }

  withJson(add) {
    return this.with({ json: Object.assign({}, this.json, add) });
  }

  describe(text) {
    if (typeof text !== 'string') throw new ZodSubsetError('.describe() takes a string');
    return this.with({ description: text });
  }

  optional() {
    return this.with({ isOptional: true });
  }

  nullable() {
    const inner = this.toJSONSchema();
    return guarded(new Schema('nullable', { anyOf: [inner, { type: 'null' }] }));
  }

  default(value) {
    if (value === undefined || typeof value === 'function') {
      throw new ZodSubsetError('.default() takes a JSON value');
    }
    return this.with({ hasDefault: true, defaultValue: value });
  }

  // The JSON Schema of this schema, with its description and default.
  toJSONSchema() {
    const out = Object.assign({}, this.json);
    if (this.description !== undefined) out.description = this.description;
    if (this.hasDefault) out.default = this.defaultValue;
    return out;
  }
}

class StringSchema extends Schema {
  min(n) { return this.withJson({ minLength: count(n, '.min()') }); }
  max(n) { return this.withJson({ maxLength: count(n, '.max()') }); }
  length(n) {
    const k = count(n, '.length()');
    return this.withJson({ minLength: k, maxLength: k });
  }
  nonempty() { return this.withJson({ minLength: 1 }); }
  regex(re) {
    if (!(re instanceof RegExp)) throw new ZodSubsetError('.regex() takes a regular expression');
    if (re.flags.replace('u', '') !== '') {
      throw new ZodSubsetError(`.regex() takes a pattern without flags (JSON Schema has none), not /${re.source}/${re.flags}`);
    }
    return this.withJson({ pattern: re.source });
  }
}

class NumberSchema extends Schema {
  int() { return this.withJson({ type: 'integer' }); }
  min(n) { return this.withJson({ minimum: finiteNumber(n, '.min()') }); }
  gte(n) { return this.withJson({ minimum: finiteNumber(n, '.gte()') }); }
  max(n) { return this.withJson({ maximum: finiteNumber(n, '.max()') }); }
  lte(n) { return this.withJson({ maximum: finiteNumber(n, '.lte()') }); }
  gt(n) { return this.withJson({ exclusiveMinimum: finiteNumber(n, '.gt()') }); }
  lt(n) { return this.withJson({ exclusiveMaximum: finiteNumber(n, '.lt()') }); }
  positive() { return this.withJson({ exclusiveMinimum: 0 }); }
  nonnegative() { return this.withJson({ minimum: 0 }); }
  negative() { return this.withJson({ exclusiveMaximum: 0 }); }
  nonpositive() { return this.withJson({ maximum: 0 }); }
}

class ArraySchema extends Schema {
  min(n) { return this.withJson({ minItems: count(n, '.min()') }); }
  max(n) { return this.withJson({ maxItems: count(n, '.max()') }); }
  length(n) {
    const k = count(n, '.length()');
    return this.withJson({ minItems: k, maxItems: k });
  }
  nonempty() { return this.withJson({ minItems: 1 }); }
}

class ObjectSchema extends Schema {
  toJSONSchema() {
    const properties = {};
    const required = [];
    for (const [name, child] of Object.entries(this.shape)) {
      properties[name] = child.toJSONSchema();
      if (!child.isOptional && !child.hasDefault) required.push(name);
    }
    const out = { type: 'object', properties };
    if (required.length > 0) out.required = required;
    out.additionalProperties = false;
    if (this.description !== undefined) out.description = this.description;
    if (this.hasDefault) out.default = this.defaultValue;
    return out;
  }
}

const primitive = (type) => () => guarded(new Schema(type, { type }));

const literalType = (value) => {
  if (value === null) return 'null';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'number' && Number.isFinite(value)) {
    return Number.isInteger(value) ? 'integer' : 'number';
  }
  return refuse(`z.literal(${String(value)})`);
};

const api = {
  string: () => guarded(new StringSchema('string', { type: 'string' })),
  number: () => guarded(new NumberSchema('number', { type: 'number' })),
  boolean: primitive('boolean'),
  null: primitive('null'),
  literal: (value) => {
    const type = literalType(value);
    return guarded(new Schema('literal', type === 'null' ? { type } : { type, const: value }));
  },
  enum: (values) => {
    if (!Array.isArray(values) || values.length === 0 || !values.every((v) => typeof v === 'string')) {
      throw new ZodSubsetError('z.enum() takes a non-empty array of strings');
    }
    return guarded(new Schema('enum', { type: 'string', enum: values.slice() }));
  },
  optional: (schema) => expectSchema(schema, 'z.optional()').optional(),
  nullable: (schema) => expectSchema(schema, 'z.nullable()').nullable(),
  array: (item) => {
    const items = expectSchema(item, 'z.array()').toJSONSchema();
    return guarded(new ArraySchema('array', { type: 'array', items }));
  },
  object: (shape) => {
    if (shape === null || typeof shape !== 'object' || Array.isArray(shape)) {
      throw new ZodSubsetError('z.object() takes an object of schemas');
    }
    const own = {};
    for (const [name, child] of Object.entries(shape)) own[name] = expectSchema(child, `z.object() field "${name}"`);
    return guarded(new ObjectSchema('object', { type: 'object' }, { shape: own }));
  },
  record: (first, second) => {
    const value = second === undefined ? first : second;
    if (second !== undefined) {
      const key = expectSchema(first, 'z.record() key');
      const plain = key.kind === 'string' && Object.keys(key.json).length === 1;
      if (!plain) refuse('a z.record() key other than a plain z.string()');
    }
    const values = expectSchema(value, 'z.record()').toJSONSchema();
    return guarded(new Schema('record', { type: 'object', additionalProperties: values }));
  },
  union: (options) => {
    if (!Array.isArray(options) || options.length === 0) {
      throw new ZodSubsetError('z.union() takes a non-empty array of schemas');
    }
    const anyOf = options.map((o, i) => expectSchema(o, `z.union() option ${i}`).toJSONSchema());
    return guarded(new Schema('union', { anyOf }));
  },
};
api.default = (schema, value) => expectSchema(schema, 'z.default()').default(value);

export const z = new Proxy(api, {
  get(target, prop) {
    if (typeof prop === 'symbol' || prop in target) return target[prop];
    if (prop === 'then') return undefined;
    return refuse(`z.${prop}`);
  },
});

export { ZodSubsetError };
export default z;
