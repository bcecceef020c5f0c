export interface LambdaOptionsConfig {
  /** The function's name or ARN (see adapters/lambda/function). @default 'execgate-dev-execute' @env EXECGATE_ADAPTERS_LAMBDA_FUNCTION_NAME */
  functionName: string
  /** A version or alias; empty for $LATEST. @default '' @env EXECGATE_ADAPTERS_LAMBDA_QUALIFIER */
  qualifier: string
  /** @default 'us-east-1' @env EXECGATE_ADAPTERS_LAMBDA_REGION */
  region: string
  /** An endpoint URL instead of AWS's (serverless-offline, a VPC endpoint). @default '' @env EXECGATE_ADAPTERS_LAMBDA_ENDPOINT */
  endpoint: string
}

export const lambdaSchema = {
  functionName: { doc: 'Lambda function name or ARN', format: String, default: 'execgate-dev-execute' },
  qualifier: { doc: 'Lambda version or alias (empty: $LATEST)', format: String, default: '' },
  region: { doc: 'AWS region for Lambda', format: String, default: 'us-east-1' },
  endpoint: { doc: 'Endpoint URL instead of AWS (empty: AWS)', format: String, default: '' },
}
