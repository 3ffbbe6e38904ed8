/**
 * The SDL of the account's own settings and belongings besides pods and endpoints: registry
 * credentials, user settings (SSH keys) and network volumes.
 */
export const accountTypeDefs = /* GraphQL */ `
  type ContainerRegistryAuth {
    id: String
    name: String
  }

  input SaveRegistryAuthInput {
    name: String
    username: String
    password: String
  }

  input UpdateRegistryAuthInput {
    id: String
    username: String
    password: String
  }

  input UpdateUserSettingsInput {
    pubKey: String
  }

  type NetworkVolume {
    id: String
    name: String
    size: Int
    dataCenterId: String
  }
`;
