/** An ECR delegation as routes see it: what the account registered, parsed from the resource ARN. */
export interface RegistryDelegation {
  id: string;
  accountId: string;
  name: string | null;
  /** The 12-digit AWS account id that owns the repository. */
  awsAccount: string;
  awsRegion: string;
  /** `aws`, `aws-cn` or `aws-us-gov`. */
  awsPartition: string;
  repository: string;
  tag: string;
  createdAt: number;
}
