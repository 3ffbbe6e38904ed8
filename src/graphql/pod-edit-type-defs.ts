/** The SDL of `podEditJob`: a pod's container settings changed, as upstream's console and dstack change them. */
export const podEditTypeDefs = /* GraphQL */ `
  input PodEditJobInput {
    podId: String
    imageName: String
    containerDiskInGb: Int
    "A pod volume's size cannot change; only its current size (or 0 for none) is accepted."
    volumeInGb: Int
    "Replaces the start command: shell words, or {\\"cmd\\": [...], \\"entrypoint\\": [...]}."
    dockerArgs: String
    "Replaces the pod's env."
    env: [EnvironmentVariableInput]
    "Comma-separated <port>/<protocol>; replaces the pod's ports."
    ports: String
    "A registry credential of yours; an empty string removes it."
    containerRegistryAuthId: String
    volumeMountPath: String
  }

  extend type Mutation {
    "Changes a pod's image, start command, env, ports, disk, volume path or registry credential (only the fields sent); a running pod restarts on its host with a fresh container disk, its volume kept. Works on a cluster's pods too."
    podEditJob(input: PodEditJobInput): Pod
  }
`;
