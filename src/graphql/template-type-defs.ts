/** The SDL of templates (pod and serverless ones alike) and the input that saves one. */
export const templateTypeDefs = /* GraphQL */ `
  type PodTemplate {
    id: String
    name: String
    imageName: String
    dockerArgs: String
    containerDiskInGb: Int
    volumeInGb: Int
    volumeMountPath: String
    "Comma list, e.g. \\"8888/http,22/tcp\\"."
    ports: String
    env: [EnvironmentVariable]
    isServerless: Boolean
    readme: String
    containerRegistryAuthId: String
    startSsh: Boolean
    startJupyter: Boolean
    startScript: String
    advancedStart: Boolean
    isPublic: Boolean
    "True for the templates Gantry ships (its official catalog)."
    isRunpod: Boolean
    category: String
    "One entry per port, from ports; Gantry keeps no port labels (name is null)."
    portsConfig: [PortConfig]
  }

  type PortConfig {
    port: String
    name: String
  }

  input PortConfigInput {
    port: String
    name: String
  }

  input PodTemplateInput {
    isRunpod: Boolean
    isPublic: Boolean
    isServerless: Boolean
    category: String
  }

  input SaveTemplateInput {
    id: String
    name: String
    imageName: String
    dockerArgs: String
    containerDiskInGb: Int
    volumeInGb: Int
    volumeMountPath: String
    ports: String
    env: [EnvironmentVariableInput]
    isServerless: Boolean
    readme: String
    "\\"\\" means none."
    containerRegistryAuthId: String
    startSsh: Boolean
    startJupyter: Boolean
    isPublic: Boolean
    category: String
    startScript: String
    advancedStart: Boolean
    "Accepted and not kept: Gantry has no port labels."
    portsConfig: [PortConfigInput]
  }

  extend type Mutation {
    "Deletes your template of that name (as DELETE /v2/templates/{id}); a name several of your templates share is refused. Answers null."
    deleteTemplate(templateName: String!): Boolean
  }
`;
