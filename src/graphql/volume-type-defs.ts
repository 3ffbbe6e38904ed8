/** The SDL of network volumes' own mutations and of the data center a volume is in (dstack's calls). */
export const volumeTypeDefs = /* GraphQL */ `
  extend type NetworkVolume {
    dataCenter: DataCenter
  }

  input CreateNetworkVolumeInput {
    name: String
    "GB, 10-4096."
    size: Int
    dataCenterId: String
  }

  input DeleteNetworkVolumeInput {
    id: String
  }

  extend type Mutation {
    "Creates a network volume (as POST /v2/network-volumes)."
    createNetworkVolume(input: CreateNetworkVolumeInput): NetworkVolume
    "Deletes a network volume and its data; an unknown or another account's volume is an error whose message starts \\"Tried to delete nonexistent network volume\\". Answers null."
    deleteNetworkVolume(input: DeleteNetworkVolumeInput): Boolean
  }
`;
