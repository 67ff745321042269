/**
 * What crosses the wire must be plain JSON. JSON.stringify drops functions and symbols silently; a value
 * that would lose parts must fail loudly instead.
 */
export function asJson(value: unknown): unknown {
  const text = JSON.stringify(value, (key, item) => {
    const type = typeof item;
    if (type === 'function' || type === 'symbol' || type === 'bigint') {
      throw new TypeError(`${key ? `"${key}" is` : 'it is'} a ${type}, which JSON cannot hold`);
    }
    return item;
  });
  if (text === undefined) throw new TypeError('it has no JSON form');
  return JSON.parse(text);
}
