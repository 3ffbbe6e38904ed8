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

/** A volume's size bounds, GB (REST and GraphQL creates alike). */
export const VOLUME_SIZE_GB = { min: 10, max: 4096 } as const;
/** A volume's name length bounds. */
export const VOLUME_NAME_LENGTH = { min: 1, max: 191 } as const;
