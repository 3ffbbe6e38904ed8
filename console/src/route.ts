import { useEffect, useState } from 'preact/hooks';

/** The page address lives in the fragment (`#/pods/abc`): the server needs no route per page. */
export const currentRoute = () => (location.hash.replace(/^#/, '') || '/pods').split('?')[0]!;

export function useRoute(): string {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const update = () => setRoute(currentRoute());
    addEventListener('hashchange', update);
    return () => removeEventListener('hashchange', update);
  }, []);
  return route;
}

export const navigate = (route: string) => {
  location.hash = `#${route}`;
};
