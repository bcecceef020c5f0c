import {
  Container,
  type BindingActivation,
  type BindingIdentifier,
  type ContainerModule,
  type Newable,
  type ServiceIdentifier,
} from 'inversify'

/**
 * The composition root's container, counting every change to its bindings: what the request path would otherwise
 * resolve on every run (the bound execution listeners: inversify's `getAll` was 7 % of a trivial monty run's CPU,
 * profiled) is resolved again only when the count moved. A binding made by `bind(...).to…()` is counted at `bind`,
 * whose fluent `to…` adds it in the same synchronous step; what loads or unbinds asynchronously is counted before
 * and after.
 */
export class CountedContainer extends Container {
  private changes = 0

  /** Moves whenever a binding may have been added, removed or replaced. */
  get bindingChanges(): number {
    return this.changes
  }

  override bind<T>(serviceIdentifier: ServiceIdentifier<T>) {
    this.changes++
    return super.bind<T>(serviceIdentifier)
  }

  override async rebind<T>(serviceIdentifier: ServiceIdentifier<T>) {
    this.changes++
    const fluent = await super.rebind<T>(serviceIdentifier)
    this.changes++
    return fluent
  }

  override rebindSync<T>(serviceIdentifier: ServiceIdentifier<T>) {
    this.changes++
    return super.rebindSync<T>(serviceIdentifier)
  }

  override async unbind(identifier: BindingIdentifier | ServiceIdentifier): Promise<void> {
    this.changes++
    try {
      await super.unbind(identifier)
    } finally {
      this.changes++
    }
  }

  override unbindSync(identifier: BindingIdentifier | ServiceIdentifier): void {
    this.changes++
    super.unbindSync(identifier)
  }

  override async unbindAll(): Promise<void> {
    this.changes++
    try {
      await super.unbindAll()
    } finally {
      this.changes++
    }
  }

  override unbindAllSync(): void {
    this.changes++
    super.unbindAllSync()
  }

  override async load(...modules: ContainerModule[]): Promise<void> {
    this.changes++
    try {
      await super.load(...modules)
    } finally {
      this.changes++
    }
  }

  override loadSync(...modules: ContainerModule[]): void {
    this.changes++
    super.loadSync(...modules)
  }

  override async unload(...modules: ContainerModule[]): Promise<void> {
    this.changes++
    try {
      await super.unload(...modules)
    } finally {
      this.changes++
    }
  }

  override unloadSync(...modules: ContainerModule[]): void {
    this.changes++
    super.unloadSync(...modules)
  }

  override restore(): void {
    this.changes++
    super.restore()
  }

  override onActivation<T>(serviceIdentifier: ServiceIdentifier<T>, activation: BindingActivation<T>): void {
    this.changes++
    super.onActivation<T>(serviceIdentifier, activation)
  }

  override register(pluginConstructor: Newable): void {
    this.changes++
    super.register(pluginConstructor)
  }
}
