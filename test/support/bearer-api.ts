/**
 * Gantry's API as the end-to-end tests call it: `Authorization: Bearer <key>`, a JSON body when one
 * is given, and the answer's status with its JSON body (null when empty). `base` is read at each
 * call, so a server restarted on another address is followed.
 */
export type ApiCall = <T = any>(method: string, path: string, body?: unknown) => Promise<{ status: number; body: T }>;

export function bearerApi(base: () => string, key: string): ApiCall {
  return async <T = any>(method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base()}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
  };
}
