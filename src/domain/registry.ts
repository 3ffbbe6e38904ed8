/** A container registry credential as routes see it: the secrets are never part of it. */
export interface Registry {
  id: string;
  accountId: string;
  name: string;
  createdAt: number;
}
