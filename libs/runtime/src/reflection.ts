import { toBinary } from '@bufbuild/protobuf';
import type { MessageInitShape, DescFile, DescMessage, DescService } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import { Code, type ServiceImpl } from '@connectrpc/connect';
import { ServerReflection } from '@engram/contracts/grpc';
import type { ServerReflectionResponseSchema, ServerReflectionRequest } from '@engram/contracts/grpc';

type ResponseInit = MessageInitShape<typeof ServerReflectionResponseSchema>;

/** Index of the files, symbols and extensions reachable from a set of services. */
class DescriptorIndex {
  readonly files = new Map<string, DescFile>();
  readonly symbols = new Map<string, DescFile>();
  readonly extensionNumbers = new Map<string, Map<number, DescFile>>();

  constructor(readonly services: readonly DescService[]) {
    for (const service of services) this.#addFile(service.file);
  }

  #addFile(file: DescFile): void {
    const fileName = `${file.name}.proto`;
    if (this.files.has(fileName)) return;
    this.files.set(fileName, file);
    for (const dependency of file.dependencies) this.#addFile(dependency);
    for (const message of file.messages) this.#addMessage(message, file);
    for (const enumeration of file.enums) this.symbols.set(enumeration.typeName, file);
    for (const extension of file.extensions) this.#addExtension(extension.extendee, extension.number, file);
    for (const service of file.services) {
      this.symbols.set(service.typeName, file);
      for (const method of service.methods) this.symbols.set(`${service.typeName}.${method.name}`, file);
    }
  }

  #addMessage(message: DescMessage, file: DescFile): void {
    this.symbols.set(message.typeName, file);
    for (const field of message.fields) this.symbols.set(`${message.typeName}.${field.name}`, file);
    for (const nested of message.nestedMessages) this.#addMessage(nested, file);
    for (const nested of message.nestedEnums) this.symbols.set(nested.typeName, file);
    for (const extension of message.nestedExtensions) {
      this.#addExtension(extension.extendee, extension.number, file);
    }
  }

  #addExtension(extendee: DescMessage, fieldNumber: number, file: DescFile): void {
    let numbers = this.extensionNumbers.get(extendee.typeName);
    if (numbers === undefined) {
      numbers = new Map();
      this.extensionNumbers.set(extendee.typeName, numbers);
    }
    numbers.set(fieldNumber, file);
  }

  /** The file and its transitive dependencies, dependencies first, each serialized once. */
  serializeWithDependencies(file: DescFile): Uint8Array[] {
    const ordered: DescFile[] = [];
    const seen = new Set<string>();
    const visit = (f: DescFile): void => {
      if (seen.has(f.name)) return;
      seen.add(f.name);
      for (const dependency of f.dependencies) visit(dependency);
      ordered.push(f);
    };
    visit(file);
    // The requested file first, as reflection clients expect; the rest follow.
    const requested = ordered.pop();
    return [requested, ...ordered]
      .filter((f): f is DescFile => f !== undefined)
      .map((f) => toBinary(FileDescriptorProtoSchema, f.proto));
  }
}

function answer(index: DescriptorIndex, request: ServerReflectionRequest): ResponseInit['messageResponse'] {
  const notFound = (what: string) => ({
    case: 'errorResponse' as const,
    value: { errorCode: Code.NotFound, errorMessage: `${what} not found` },
  });
  const files = (file: DescFile | undefined, what: string) =>
    file === undefined
      ? notFound(what)
      : {
          case: 'fileDescriptorResponse' as const,
          value: { fileDescriptorProto: index.serializeWithDependencies(file) },
        };
  const message = request.messageRequest;
  switch (message.case) {
    case 'listServices':
      return {
        case: 'listServicesResponse',
        value: { service: index.services.map((service) => ({ name: service.typeName })) },
      };
    case 'fileByFilename':
      return files(index.files.get(message.value), `file ${message.value}`);
    case 'fileContainingSymbol':
      return files(index.symbols.get(message.value), `symbol ${message.value}`);
    case 'fileContainingExtension': {
      const { containingType, extensionNumber } = message.value;
      return files(
        index.extensionNumbers.get(containingType)?.get(extensionNumber),
        `extension ${extensionNumber} of ${containingType}`,
      );
    }
    case 'allExtensionNumbersOfType': {
      const numbers = index.extensionNumbers.get(message.value);
      if (numbers === undefined && !index.symbols.has(message.value))
        return notFound(`type ${message.value}`);
      return {
        case: 'allExtensionNumbersResponse',
        value: {
          baseTypeName: message.value,
          extensionNumber: [...(numbers?.keys() ?? [])].sort((a, b) => a - b),
        },
      };
    }
    case undefined:
      return {
        case: 'errorResponse',
        value: { errorCode: Code.InvalidArgument, errorMessage: 'empty reflection request' },
      };
  }
}

/**
 * `grpc.reflection.v1.ServerReflection` over the descriptors compiled into the contracts, so that
 * `buf curl --protocol grpc --http2-prior-knowledge` can list and call every service. Public.
 */
export function createReflectionService(
  services: readonly DescService[],
): ServiceImpl<typeof ServerReflection> {
  const index = new DescriptorIndex([...services, ServerReflection]);
  return {
    async *serverReflectionInfo(requests: AsyncIterable<ServerReflectionRequest>) {
      for await (const request of requests) {
        const response: ResponseInit = {
          validHost: request.host,
          originalRequest: request,
          messageResponse: answer(index, request),
        };
        yield response;
      }
    },
  };
}
