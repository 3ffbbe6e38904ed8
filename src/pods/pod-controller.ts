export class PodController {
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
}
