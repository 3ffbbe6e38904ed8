/** A network volume: storage in one data center that pods there can mount. */
export interface NetworkVolume {
  id: string;
  accountId: string;
  name: string;
  /** GB */
  size: number;
  dataCenterId: string;
  createdAt: number;
}
