export class PodsService {}
