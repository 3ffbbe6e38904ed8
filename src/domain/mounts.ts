/** A pod's container-independent storage: its persistent volume and the network volumes it mounts. */
interface PersistentMount {
  size: number;
  path: string;
}

interface NetworkMount {
  volumeId: string;
  path: string;
}

export interface Mounts {
  persistent?: PersistentMount;
  network?: NetworkMount[];
}
